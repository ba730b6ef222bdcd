#!/bin/sh
ulimit -l
