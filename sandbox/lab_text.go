package sandbox

import (
	"regexp"
	"strings"
)

// reasonZh translates the fixed phrases of a backend's reason (package
// choose joins them with "; "); what follows a colon (an error from the
// system, a path, a package name) is a diagnostic and stays as it is.
var reasonZh = []struct {
	re *regexp.Regexp
	zh string
}{
	{regexp.MustCompile(`^RDMA experiments are turned off \(--backend none\)$`), "RDMA 实验已关闭（--backend none）"},
	{regexp.MustCompile(`^kernel (\S+) has no RDMA devices and cannot get Soft-RoCE: (.*)$`), "内核 $1 没有 RDMA 设备，也无法启用 Soft-RoCE：$2"},
	{regexp.MustCompile(`^kernel (\S+) has no RDMA devices and setting up Soft-RoCE failed: (.*)$`), "内核 $1 没有 RDMA 设备，设置 Soft-RoCE 也失败了：$2"},
	{regexp.MustCompile(`^kernel (\S+) has no RDMA devices$`), "内核 $1 没有 RDMA 设备"},
	{regexp.MustCompile(`^the Soft-RoCE guest cannot be built: missing (.*)$`), "无法构建 Soft-RoCE 虚拟机：缺少 $1"},
	{regexp.MustCompile(`^the Soft-RoCE guest cannot be built: (.*)$`), "无法构建 Soft-RoCE 虚拟机：$1"},
	{regexp.MustCompile(`^using the Soft-RoCE guest \(QEMU\)$`), "使用 Soft-RoCE 虚拟机（QEMU）"},
	{regexp.MustCompile(`^this kernel has RDMA devices: (.*)$`), "本机内核有 RDMA 设备：$1"},
	{regexp.MustCompile(`^cannot list this kernel's RDMA devices: (.*)$`), "无法列出本机内核的 RDMA 设备：$1"},
	{regexp.MustCompile(`^Soft-RoCE devices created on this host \(--setup-softroce\)$`), "已在本机创建 Soft-RoCE 设备（--setup-softroce）"},
	{regexp.MustCompile(`^this server was started without an RDMA backend$`), "本服务器启动时没有配置 RDMA 后端"},
	{regexp.MustCompile(`^no backend can run experiments that need (\S+) on this machine$`), "这台机器上没有能运行需要 $1 的实验的后端"},
}

// ReasonText is a backend's reason in lang ("zh" translated phrase by
// phrase, anything else as it is).
func ReasonText(reason, lang string) string {
	if lang != "zh" || reason == "" {
		return reason
	}
	parts := strings.Split(reason, "; ")
	for i, p := range parts {
		for _, r := range reasonZh {
			if r.re.MatchString(p) {
				parts[i] = r.re.ReplaceAllString(p, r.zh)
				break
			}
		}
	}
	return strings.Join(parts, "；")
}
