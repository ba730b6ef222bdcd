#!/bin/sh
# "A lock with COMPARE_AND_SWAP", judged by the peer's own view: it took
# the lock itself with CAS through rxe1, counted its own increments, saw
# whether anyone changed the counter while it held the lock, and reads the
# counter at the end. Every increment of the learner's is the counter less
# the peer's own; a lost update or a change under the peer's lock is a
# broken mutual exclusion, whatever the program printed.
say() { if [ "$LAB_LANG" = zh ]; then echo "$2"; else echo "$1"; fi; }
rounds=50
val() { sed -n "s/^$1: \([-0-9]*\).*/\1/p" "$LAB_PEER_OUT" | head -1; }
if grep -q "^peer failure:" "$LAB_PEER_OUT"; then
	say "The lab's peer failed on its own side ($(grep '^peer failure:' "$LAB_PEER_OUT" | head -1 | cut -c15-120)): run again; if it persists, reset your machine." "实验室的对端自己出了错（$(grep '^peer failure:' "$LAB_PEER_OUT" | head -1 | cut -c15-120)）：请再运行一次；若仍然如此，请重置你的机器。"
	exit 1
fi
if ! grep -q "^connected: yes$" "$LAB_PEER_OUT"; then
	say "The peer's QP was never connected to yours, so the peer saw none of your increments: call connect_to_peer() first." "对端的 QP 从未连接到你的 QP，所以对端没有看到你的任何一次加一：先调用 connect_to_peer()。"
	exit 1
fi
mine=$(val "peer increments")
yours=$(val "your increments")
counter=$(val "counter")
held=$(val "lock found held by you")
changed=$(val "counter changed while the peer held the lock")
atend=$(val "lock at the end")
mine=${mine:-0}
yours=${yours:-0}
held=${held:-0}
changed=${changed:-0}
if [ "$changed" != 0 ]; then
	first=$(grep "^counter changed while" "$LAB_PEER_OUT" | sed -n 's/.*(first: \(.*\))$/\1/p' | head -1)
	say "Mutual exclusion broken: while the peer held the lock, the counter changed under it (changes seen: $changed; the first: $first). Your READ and WRITE of the counter must come after your CAS 0 -> 2 returned 0, and before your release." "互斥被破坏了：对端持有锁期间，计数器被改动了 $changed 次（第一次：$first）。你对计数器的 READ 和 WRITE 必须在 CAS 0 -> 2 返回 0 之后、释放之前进行。"
	exit 1
fi
if [ "$yours" -le 0 ]; then
	say "The counter is ${counter:-?} and the peer added $mine of it itself: none of your $rounds increments reached the counter (the lock was found held by you $held times). Take the lock with IBV_WR_ATOMIC_CMP_AND_SWP, then READ, add one, WRITE, then release." "计数器是 ${counter:-?}，其中 $mine 是对端自己加的：你的 $rounds 次加一没有一次到达计数器（对端发现锁被你持有 $held 次）。先用 IBV_WR_ATOMIC_CMP_AND_SWP 拿锁，再 READ、加一、WRITE，最后释放。"
	exit 1
fi
if [ "$yours" -lt "$rounds" ]; then
	say "Lost updates: the counter is $counter, the peer added $mine, so only $yours of your $rounds increments are in it. Either your program stopped early (exit status $LAB_EXIT) or some increments were not under the lock: a READ and WRITE that race with the peer's increment lose one of the two." "丢失了更新：计数器是 $counter，对端加了 $mine，所以你的 $rounds 次加一只有 $yours 次留在里面。要么你的程序提前停了（退出状态 $LAB_EXIT），要么有的加一不在锁内：与对端的加一交错的 READ 和 WRITE 会丢掉其中一个。"
	exit 1
fi
if [ "$yours" -gt "$rounds" ]; then
	say "The counter is $counter, the peer added $mine: your side added $yours, more than the $rounds increments asked for. Add exactly one per round." "计数器是 $counter，对端加了 $mine：你这边加了 $yours，比要求的 $rounds 次多。每一轮只加一。"
	exit 1
fi
if [ "${atend:-0}" != 0 ]; then
	say "Your $rounds increments are all in the counter, but the lock word still held $atend at the end: release the lock with CAS 2 -> 0 after every increment, or the peer waits for ever." "你的 $rounds 次加一都在计数器里，但结束时锁字仍然是 $atend：每次加一之后都要用 CAS 2 -> 0 释放锁，否则对端会一直等下去。"
	exit 1
fi
if [ "$LAB_EXIT" != 0 ]; then
	say "The counter holds your $rounds increments, but your program exited with status $LAB_EXIT: it must exit 0 when every round succeeded." "计数器里有你的 $rounds 次加一，但你的程序以状态 $LAB_EXIT 退出：每一轮都成功时应以 0 退出。"
	exit 1
fi
say "Mutual exclusion held, as the peer saw it: the counter is $counter = the peer's $mine + your $rounds, no update lost; the counter never changed while the peer held the lock; the peer's own CAS found the lock held by you $held times; the lock was free at the end." "从对端的视角看，互斥成立：计数器是 $counter = 对端的 $mine + 你的 $rounds，没有丢失更新；对端持有锁期间计数器从未被改动；对端自己的 CAS 发现锁被你持有 $held 次；结束时锁是空闲的。"
