package web

import (
	"regexp"
	"strings"

	"github.com/rdmalab/rdmalab/sandbox"
)

// peerLinesZh are the lines lesson 04's peers (lessons/course/04-first-
// program/peers) print, each with its Chinese: the check scripts read
// the English report (LAB_PEER_OUT), the learner reads it in the page's
// language. A line not listed stays as printed.
var peerLinesZh = []struct {
	re *regexp.Regexp
	zh string
}{
	{regexp.MustCompile(`^peer on rxe1: rdma_cm server on (\S+) port (\S+)$`), "rxe1 上的对端：rdma_cm 服务端，地址 $1，端口 $2"},
	{regexp.MustCompile(`^peer on rxe1: QP (\d+), buffer of (\d+) bytes, rkey (0x[0-9a-f]+)$`), "rxe1 上的对端：QP $1，缓冲区 $2 字节，rkey $3"},
	{regexp.MustCompile(`^connection: established$`), "连接：已建立"},
	{regexp.MustCompile(`^connection: none$`), "连接：没有"},
	{regexp.MustCompile(`^connected: yes$`), "已连接：是"},
	{regexp.MustCompile(`^connected: no$`), "已连接：否"},
	{regexp.MustCompile(`^received bytes: (\d+)$`), "收到的字节数：$1"},
	{regexp.MustCompile(`^received: ?$`), "收到：（无）"},
	{regexp.MustCompile(`^received: (.*)$`), "收到：“$1”"},
	{regexp.MustCompile(`^replied: nothing$`), "回复：没有"},
	{regexp.MustCompile(`^replied: (.*)$`), "回复：“$1”"},
	{regexp.MustCompile(`^disconnected: yes$`), "已断开：是"},
	{regexp.MustCompile(`^disconnected: no$`), "已断开：否"},
	{regexp.MustCompile(`^completion error: (.*)$`), "完成出错：$1"},
	{regexp.MustCompile(`^RTR failed$`), "转到 RTR 失败"},
	{regexp.MustCompile(`^peer: no rxe1$`), "对端：没有 rxe1"},
}

// peerReport is the peer's report in both languages: as printed (en), and
// line by line in Chinese (zh), so a zh page does not show "peer on rxe1:
// … connected: yes" (issue 44 item 8).
func peerReport(rep string) sandbox.Text {
	lines := strings.Split(rep, "\n")
	for i, l := range lines {
		for _, p := range peerLinesZh {
			if p.re.MatchString(l) {
				lines[i] = p.re.ReplaceAllString(l, p.zh)
				break
			}
		}
	}
	return sandbox.Text{"en": rep, "zh": strings.Join(lines, "\n")}
}
