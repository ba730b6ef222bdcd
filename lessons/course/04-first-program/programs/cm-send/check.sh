#!/bin/sh
# Exercise 4: the peer must have accepted a connection, received
# "hello, peer" in a RECV and replied; the program must have got the reply.
say() { if [ "$LAB_LANG" = zh ]; then echo "$2"; else echo "$1"; fi; }
if ! grep -q "^connection: established" "$LAB_PEER_OUT"; then
	say "The peer saw no connection: resolve the address and route, create the QP, then rdma_connect to 10.0.0.2 port 7471." "对端没有看到连接：先解析地址和路由、创建 QP，再 rdma_connect 到 10.0.0.2 的 7471 端口。"
	exit 1
fi
if ! grep -q "^received: hello, peer$" "$LAB_PEER_OUT"; then
	got=$(grep "^received:" "$LAB_PEER_OUT")
	say "Connected, but the peer's RECV did not get \"hello, peer\" (${got:-nothing}): post a SEND of msg with its terminating zero." "连接已建立，但对端的接收没有收到「hello, peer」（${got:-无}）：提交一个发送 msg（连同结尾的 0）的 SEND。"
	exit 1
fi
if ! grep -q "^replied: pong: hello, peer" "$LAB_PEER_OUT" || ! grep -q "^reply: pong: hello, peer" "$LAB_OUT" || [ "$LAB_EXIT" != 0 ]; then
	say "The peer received your SEND, but your program did not receive and print its reply and exit 0 (exit status $LAB_EXIT): post the RECV before connecting and poll for both completions." "对端收到了你的 SEND，但你的程序没有收到并打印它的回复、再以 0 退出（退出状态 $LAB_EXIT）：在连接之前提交接收，并轮询两个完成。"
	exit 1
fi
say "Connected by rdma_cm, SEND consumed the peer's RECV, and its reply consumed yours." "通过 rdma_cm 建立了连接；你的 SEND 消耗了对端的接收，对端的回复消耗了你的接收。"
