package expkit

import "github.com/rdmalab/rdmalab/sandbox"

// The memlock (host) and reg-mr (RDMA) experiments are one lesson widget
// with the same params and presets: only the wording of a few helps and the
// limit the "raise limit" preset picks differ, so those are arguments.

// LimitParam is the RLIMIT_MEMLOCK enum "limit", defaulting to 64 KiB (a
// common container default); more lists the choices after it.
func LimitParam(help sandbox.Text, more ...sandbox.Choice) sandbox.Param {
	return sandbox.Param{Name: "limit", Kind: sandbox.ParamEnum, Title: Say("RLIMIT_MEMLOCK (ulimit -l)", "RLIMIT_MEMLOCK（ulimit -l）"),
		Help: help, Default: "65536",
		Choices: append([]sandbox.Choice{{Value: "65536", Title: Say("64 KiB (a common container default)", "64 KiB（常见的容器默认值）")}}, more...)}
}

// SizeParam is the "size" in bytes to pin: 4 KiB to 64 MiB, 1 MiB by default.
func SizeParam(title, help sandbox.Text) sandbox.Param {
	return sandbox.Param{Name: "size", Kind: sandbox.ParamBytes, Title: title, Help: help,
		Min: 4 << 10, Max: 64 << 20, Default: int64(1 << 20)}
}

// IPCLockParam is the "ipc_lock" enum: drop (the default) or keep
// CAP_IPC_LOCK.
func IPCLockParam(help sandbox.Text) sandbox.Param {
	return sandbox.Param{Name: "ipc_lock", Kind: sandbox.ParamEnum, Title: Say("CAP_IPC_LOCK", "CAP_IPC_LOCK"),
		Help: help, Default: "drop", Choices: []sandbox.Choice{
			{Value: "drop", Title: Say("dropped (an ordinary container)", "去掉（普通容器）")},
			{Value: "keep", Title: Say("kept (granted IPC_LOCK)", "保留（授予 IPC_LOCK）")},
		}}
}

// MemlockPresets are "fails" (64 KiB, 1 MiB, dropped) and its two fixes:
// the limit raised to fixLimit, and CAP_IPC_LOCK kept.
func MemlockPresets(fixLimit string) []sandbox.Preset {
	return []sandbox.Preset{
		{ID: "fails", Title: Say("fails", "失败"), Values: map[string]any{"limit": "65536", "size": 1 << 20, "ipc_lock": "drop"}},
		{ID: "fix-limit", Title: Say("fix: raise limit", "修复：提高上限"), Values: map[string]any{"limit": fixLimit, "size": 1 << 20, "ipc_lock": "drop"}},
		{ID: "fix-ipc-lock", Title: Say("fix: grant IPC_LOCK", "修复：授予 IPC_LOCK"), Values: map[string]any{"limit": "65536", "size": 1 << 20, "ipc_lock": "keep"}},
	}
}
