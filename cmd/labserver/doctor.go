package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/rdmalab/rdmalab/machines/vm"
	"github.com/rdmalab/rdmalab/machines/vmimage"
	"github.com/rdmalab/rdmalab/runs/choose"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/terminals/terminal"
)

// `labserver doctor` checks this host for what `labserver serve`, with
// the same flags and environment, needs: where RDMA experiments would run,
// QEMU and the accelerator, the guest image and its snapshot, memory and
// disk against the configured guests, terminals and kept machines, the
// listen address, the database (integrity, WAL, a writable folder, its
// schema) and the LTI key's permissions. Each problem comes with its fix,
// in Chinese or English by the locale (LC_ALL, LC_MESSAGES, LANG). It
// changes nothing on the host. The exit status is 1 when something blocks
// serving (a finding of level fail), else 0.

// level is how bad a finding is.
type level int

const (
	levelOK   level = iota // fine; said in one line
	levelWarn              // serving works, worse than it could (TCG, a cold start)
	levelFail              // serve cannot start, or must not (an exposed private key)
)

// finding is one check's verdict, in both languages.
type finding struct {
	Level  level
	Check  string // what was checked, in English (a stable name)
	En, Zh string // what was found
	FixEn  string // what to do, for warn and fail
	FixZh  string
}

// checkNames are the checks' names in Chinese.
var checkNames = map[string]string{
	"backend": "RDMA 后端", "qemu": "QEMU", "accelerator": "加速器", "guest image": "虚拟机镜像",
	"snapshot": "快照", "memory": "内存", "disk": "磁盘", "listen address": "监听地址",
	"database": "数据库", "database folder": "数据库目录", "lti key": "LTI 密钥", "workers": "worker 机器",
}

// doctorLang is the locale's language: zh for a zh_* locale, else en.
func doctorLang(getenv func(string) string) string {
	for _, k := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
		if v := getenv(k); v != "" {
			if strings.HasPrefix(strings.ToLower(v), "zh") {
				return "zh"
			}
			return "en"
		}
	}
	return "en"
}

// runDoctor is `labserver doctor [serve flags]`.
func runDoctor(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	m := NewMain()
	m.Stdout, m.Stderr = stdout, stderr
	if err := m.ParseFlags(args); err != nil {
		fmt.Fprintln(stderr, "labserver doctor:", err)
		return exitCode(err)
	}
	return doctor(ctx, m.Config, os.Getenv, stdout)
}

// doctor runs every check of c and prints them; it returns the exit code.
func doctor(ctx context.Context, c Config, getenv func(string) string, out io.Writer) int {
	fs := doctorChecks(ctx, c)
	lang := doctorLang(getenv)
	fails, warns := 0, 0
	for _, f := range fs {
		switch f.Level {
		case levelFail:
			fails++
		case levelWarn:
			warns++
		}
	}
	printFindings(out, lang, fs, fails, warns)
	if fails > 0 {
		return 1
	}
	return 0
}

func printFindings(out io.Writer, lang string, fs []finding, fails, warns int) {
	mark := map[level]string{levelOK: "ok  ", levelWarn: "WARN", levelFail: "FAIL"}
	if lang == "zh" {
		mark = map[level]string{levelOK: "正常", levelWarn: "警告", levelFail: "错误"}
	}
	for _, f := range fs {
		name, text, fix, fixLabel := f.Check, f.En, f.FixEn, "fix"
		if lang == "zh" {
			name, text, fix, fixLabel = checkNames[f.Check], f.Zh, f.FixZh, "解决"
		}
		if lang == "zh" {
			fmt.Fprintf(out, "%s  %s：%s\n", mark[f.Level], name, text)
		} else {
			fmt.Fprintf(out, "%s  %s: %s\n", mark[f.Level], name, text)
		}
		if f.Level != levelOK && fix != "" {
			sep := ": "
			if lang == "zh" {
				sep = "："
			}
			fmt.Fprintf(out, "      %s%s%s\n", fixLabel, sep, fix)
		}
	}
	switch {
	case lang == "zh" && fails > 0:
		fmt.Fprintf(out, "\n%d 个问题会阻止 labserver serve 运行，另有 %d 个警告。\n", fails, warns)
	case lang == "zh":
		fmt.Fprintf(out, "\n没有阻止运行的问题；%d 个警告。\n", warns)
	case fails > 0:
		fmt.Fprintf(out, "\n%d problem(s) block labserver serve; %d warning(s).\n", fails, warns)
	default:
		fmt.Fprintf(out, "\nNothing blocks serving; %d warning(s).\n", warns)
	}
}

// doctorChecks runs the checks in the order an admin fixes things.
func doctorChecks(ctx context.Context, c Config) []finding {
	var fs []finding
	fs = append(fs, checkListen(c.Addr)...)
	fs = append(fs, checkDatabase(ctx, c.DBPath)...)
	fs = append(fs, checkLTIKey(ltiKeyFile(c.DBPath))...)
	fs = append(fs, checkGuests(ctx, c)...)
	fs = append(fs, checkKeptDisk(c)...)
	if c.Sandbox.WorkersListen != "" {
		fs = append(fs, checkWorkers(c.Sandbox)...)
	}
	return fs
}

// checkListen: the address serve listens on is free to bind.
func checkListen(addr string) []finding {
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		ln.Close()
		return []finding{{Level: levelOK, Check: "listen address", En: addr + " is free", Zh: addr + " 可用"}}
	}
	f := finding{Level: levelFail, Check: "listen address",
		En: fmt.Sprintf("cannot listen on %s: %v", addr, err), Zh: fmt.Sprintf("无法在 %s 上监听：%v", addr, err)}
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		_, port, _ := net.SplitHostPort(addr)
		f.FixEn = fmt.Sprintf("another process listens there (another labserver?): find it with `ss -ltnp 'sport = :%s'` and stop it, or give serve another --addr", port)
		f.FixZh = fmt.Sprintf("另一个进程（也许是另一个 labserver）正在那里监听：用 `ss -ltnp 'sport = :%s'` 找到并停止它，或者给 serve 另一个 --addr。", port)
	case errors.Is(err, syscall.EACCES):
		f.FixEn = "ports below 1024 need root: listen on a high port (127.0.0.1:8080) behind nginx (docs/operations.md)"
		f.FixZh = "1024 以下的端口需要 root 权限：监听一个高端口（127.0.0.1:8080），前面放 nginx（见 docs/operations.md）。"
	default:
		f.FixEn = "check --addr (host:port, the host one of this machine's addresses)"
		f.FixZh = "检查 --addr（格式 host:port，host 须是本机的地址）。"
	}
	return []finding{f}
}

// writable reports whether the serving user could create files in dir
// (and if not, why in English and Chinese): not on a read-only file
// system, and its mode grants write. Run as root (who writes anywhere) it
// asks whether the mode grants anyone write: a folder without a write bit
// is read-only for the service user.
func writable(dir string) (ok bool, why, whyZh string) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err == nil && st.Flags&unix.ST_RDONLY != 0 {
		return false, "a read-only file system", "只读文件系统"
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return false, err.Error(), err.Error()
	}
	perm := fi.Mode().Perm()
	if os.Geteuid() == 0 {
		if perm&0o222 == 0 {
			return false, fmt.Sprintf("mode %04o: no one may write", perm), fmt.Sprintf("权限 %04o：谁都不能写", perm)
		}
		return true, "", ""
	}
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return false, fmt.Sprintf("mode %04o: %v", perm, err), fmt.Sprintf("权限 %04o：当前用户不能写", perm)
	}
	return true, "", ""
}

// checkDatabase: the database's folder takes new files (SQLite writes
// its -wal and -shm beside it), the file passes quick_check, its journal
// and WAL, and its schema is not a newer release's.
func checkDatabase(ctx context.Context, path string) []finding {
	var fs []finding
	dir := filepath.Dir(path)
	if ok, why, whyZh := writable(dir); !ok {
		fs = append(fs, finding{Level: levelFail, Check: "database folder",
			En:    fmt.Sprintf("%s is read-only (%s): SQLite cannot create the database's -wal and -shm files there", dir, why),
			Zh:    fmt.Sprintf("%s 是只读的（%s）：SQLite 无法在那里创建数据库的 -wal 和 -shm 文件", dir, whyZh),
			FixEn: fmt.Sprintf("give the service user write access: `chown rdmalab:rdmalab %s && chmod 0750 %s`, or point --db at a writable folder", dir, dir),
			FixZh: fmt.Sprintf("让服务用户可以写入：`chown rdmalab:rdmalab %s && chmod 0750 %s`，或者让 --db 指向一个可写的目录。", dir, dir)})
	} else {
		fs = append(fs, finding{Level: levelOK, Check: "database folder", En: dir + " is writable", Zh: dir + " 可写"})
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return append(fs, finding{Level: levelOK, Check: "database", En: path + " does not exist yet: the first start creates it",
			Zh: path + " 还不存在：第一次启动时会创建"})
	}
	raw, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err == nil {
		defer raw.Close()
		err = raw.PingContext(ctx)
	}
	if err != nil {
		return append(fs, finding{Level: levelFail, Check: "database", En: fmt.Sprintf("%s cannot be opened: %v", path, err),
			Zh: fmt.Sprintf("无法打开 %s：%v", path, err), FixEn: "check the file's owner and mode (the service user reads and writes it)",
			FixZh: "检查文件的属主和权限（服务用户需要读写它）。"})
	}
	var check string
	if err := raw.QueryRowContext(ctx, `PRAGMA quick_check`).Scan(&check); err != nil || check != "ok" {
		if err != nil {
			check = err.Error()
		}
		fs = append(fs, finding{Level: levelFail, Check: "database", En: fmt.Sprintf("%s fails SQLite's quick_check: %s", path, check),
			Zh:    fmt.Sprintf("%s 没有通过 SQLite 的 quick_check：%s", path, check),
			FixEn: "stop the lab and put the last good backup back: `labserver restore --db " + path + " BACKUP` (docs/operations.md, Backups)",
			FixZh: "停止实验室，恢复最近一次完好的备份：`labserver restore --db " + path + " BACKUP`（见 docs/operations.md 的 Backups 一节）。"})
	} else {
		fs = append(fs, finding{Level: levelOK, Check: "database", En: path + " passes quick_check", Zh: path + " 通过了 quick_check"})
	}
	var schema int
	if err := raw.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&schema); err == nil && schema > store.LatestMigration() {
		fs = append(fs, finding{Level: levelFail, Check: "database",
			En:    fmt.Sprintf("a newer labserver migrated it (schema %d; this one knows up to %d)", schema, store.LatestMigration()),
			Zh:    fmt.Sprintf("它被更新版本的 labserver 迁移过（schema %d；本版本只认识到 %d）", schema, store.LatestMigration()),
			FixEn: "run that release (labserver version says which this is), or restore the backup taken before the upgrade",
			FixZh: "运行那个版本（用 labserver version 查看当前版本），或者恢复升级前的备份。"})
	}
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 256<<20 {
		fs = append(fs, finding{Level: levelWarn, Check: "database",
			En:    fmt.Sprintf("its WAL is %d MiB: something holds a read open so checkpoints cannot finish", fi.Size()>>20),
			Zh:    fmt.Sprintf("它的 WAL 有 %d MiB：有进程一直开着读事务，检查点无法完成", fi.Size()>>20),
			FixEn: "look for a long-running reader (a sqlite3 shell, a backup that hangs) and end it; a restart of the lab checkpoints",
			FixZh: "找出长时间运行的读者（sqlite3 命令行、卡住的备份）并结束它；重启实验室也会做检查点。"})
	}
	return fs
}

// checkLTIKey: the LTI tool's private key, when there is one, is readable
// by its owner alone.
func checkLTIKey(path string) []finding {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return []finding{{Level: levelOK, Check: "lti key", En: "none yet (made at the first LTI launch)", Zh: "还没有（第一次 LTI 启动时生成）"}}
	}
	if err != nil {
		return []finding{{Level: levelWarn, Check: "lti key", En: err.Error(), Zh: err.Error(), FixEn: "check the folder's permissions", FixZh: "检查目录权限。"}}
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return []finding{{Level: levelFail, Check: "lti key",
			En:    fmt.Sprintf("%s is readable by others (mode %04o): anyone on this machine who reads it can sign as the lab to every LMS that trusts it", path, perm),
			Zh:    fmt.Sprintf("%s 其他用户也能读取（权限 %04o）：本机上任何读到它的人都可以冒充实验室向信任它的所有 LMS 签名", path, perm),
			FixEn: fmt.Sprintf("`chmod 0600 %s` (and, if others may have read it, make a new key and register it with each LMS: docs/operations.md, LTI 1.3)", path),
			FixZh: fmt.Sprintf("`chmod 0600 %s`（如果可能已被他人读取，生成新密钥并在每个 LMS 重新登记：见 docs/operations.md 的 LTI 1.3 一节）。", path)}}
	}
	return []finding{{Level: levelOK, Check: "lti key", En: path + " is its owner's alone (0600)", Zh: path + " 只有属主可读（0600）"}}
}

// checkGuests: where RDMA experiments would run and, for the Soft-RoCE
// guest, QEMU, the accelerator, the image, its snapshot and the memory
// the guests and terminals need.
func checkGuests(ctx context.Context, c Config) []finding {
	// No Soft-RoCE set-up here: the doctor changes nothing on the host.
	d, err := choose.Decide(ctx, choose.Options{Mode: c.Sandbox.Backend})
	if err != nil {
		return []finding{{Level: levelFail, Check: "backend", En: err.Error(), Zh: err.Error(),
			FixEn: "--backend is one of auto, host, vm, none", FixZh: "--backend 只能是 auto、host、vm 或 none。"}}
	}
	var fs []finding
	switch d.Backend {
	case choose.None:
		fs = append(fs, finding{Level: levelWarn, Check: "backend", En: "RDMA experiments will not run: " + d.Reason.Get("en"),
			Zh: "RDMA 实验无法运行：" + d.Reason.Get("zh"), FixEn: d.Fix.Get("en"), FixZh: d.Fix.Get("zh")})
		if c.Sandbox.Backend != choose.VM {
			return fs
		}
	default:
		fs = append(fs, finding{Level: levelOK, Check: "backend", En: d.Backend + ": " + d.Reason.Get("en"), Zh: d.Backend + "：" + d.Reason.Get("zh")})
		if d.Backend != choose.VM {
			return fs
		}
	}
	cfg := vm.Config{Accel: c.Sandbox.VMAccel, MemoryMiB: c.Sandbox.VMMemory}.WithDefaults()
	qemu, err := vmimage.CheckQEMU(cfg.QEMU)
	if err != nil {
		fs = append(fs, finding{Level: levelFail, Check: "qemu", En: err.Error(), Zh: err.Error(),
			FixEn: "`apt-get install qemu-system-x86`", FixZh: "`apt-get install qemu-system-x86`。"})
	} else {
		fs = append(fs, finding{Level: levelOK, Check: "qemu", En: qemu, Zh: qemu})
	}
	accel, why, remembered, probe := vm.AccelVerdict(cfg, qemu)
	switch {
	case qemu == "": // no accelerator to speak of without QEMU
	case accel == vm.AccelKVM && probe:
		fs = append(fs, finding{Level: levelWarn, Check: "accelerator",
			En:    "/dev/kvm makes VMs, but no guest has booted with KVM here yet: the first start tries (2 s) and falls back to TCG if the guest makes no progress",
			Zh:    "/dev/kvm 可以创建虚拟机，但这里还没有虚拟机用 KVM 启动过：第一次启动会尝试（2 秒），虚拟机没有进展就退回 TCG",
			FixEn: "run `labserver vm boot` once: it tries KVM and remembers the verdict, which the next doctor shows",
			FixZh: "运行一次 `labserver vm boot`：它会尝试 KVM 并记住结果，下次 doctor 会显示。"})
	case accel == vm.AccelKVM:
		fs = append(fs, finding{Level: levelOK, Check: "accelerator", En: "KVM (" + orWord(why, "a guest booted with it") + ")", Zh: "KVM（" + orWord(why, "已有虚拟机用它启动过") + "）"})
	default:
		src := "a KVM boot tried here: "
		srcZh := "这里实际试过："
		if !remembered {
			src, srcZh = "", ""
		}
		if why == "requested" {
			src, srcZh, why = "", "", "LAB_VM_ACCEL=tcg"
		}
		fs = append(fs, finding{Level: levelWarn, Check: "accelerator",
			En:    "guests run under TCG (QEMU emulates the CPU: boots and experiments several times slower; ratios stay true) — " + src + why,
			Zh:    "虚拟机在 TCG 下运行（QEMU 模拟 CPU：启动和实验慢好几倍；比例仍然可信）——" + srcZh + accelWhyZh(why),
			FixEn: "for KVM: load kvm_intel or kvm_amd, give the service user /dev/kvm (group kvm), or on a VM enable nested virtualisation on its host; then delete " + filepath.Join(cfg.Dir, "accel.json") + " so the next start tries again",
			FixZh: "要用 KVM：加载 kvm_intel 或 kvm_amd，让服务用户能访问 /dev/kvm（kvm 组），虚拟机里则要在宿主机上开启嵌套虚拟化；然后删除 " + filepath.Join(cfg.Dir, "accel.json") + "，下次启动会重试。"})
	}
	im, err := vmimage.LoadImage(cfg.Dir)
	if err != nil {
		fs = append(fs, finding{Level: levelWarn, Check: "guest image",
			En:    fmt.Sprintf("no guest image in %s (%v): the first start builds it, and RDMA experiments and terminals wait for it (minutes)", cfg.Dir, err),
			Zh:    fmt.Sprintf("%s 里没有虚拟机镜像（%v）：第一次启动时才构建，RDMA 实验和终端要等它（几分钟）", cfg.Dir, err),
			FixEn: "build it now: `labserver vm build` (as the service user, with the same LAB_VM_DIR)",
			FixZh: "现在就构建：`labserver vm build`（用服务用户、同样的 LAB_VM_DIR 运行）。"})
	} else {
		fs = append(fs, finding{Level: levelOK, Check: "guest image", En: fmt.Sprintf("kernel %s, built %s, in %s", im.Release, im.Built, cfg.Dir),
			Zh: fmt.Sprintf("内核 %s，%s 构建，位于 %s", im.Release, im.Built, cfg.Dir)})
		switch {
		case qemu == "" || cfg.NoSnapshot || !c.Sandbox.VMSnapshot:
		case vm.SnapshotSaved(cfg, qemu, im, accel):
			fs = append(fs, finding{Level: levelOK, Check: "snapshot", En: "a saved guest state for this image: guests restore in seconds", Zh: "有这个镜像的虚拟机快照：虚拟机几秒内恢复"})
		default:
			fs = append(fs, finding{Level: levelWarn, Check: "snapshot",
				En:    "no saved guest state for this image and accelerator: the first guest boots from scratch and saves one",
				Zh:    "没有这个镜像和加速器的虚拟机快照：第一台虚拟机从头启动并保存快照",
				FixEn: "nothing to do (the first start makes it); `labserver vm boot` makes it now",
				FixZh: "无需处理（第一次启动会生成）；运行 `labserver vm boot` 可以现在就生成。"})
		}
	}
	return append(fs, checkMemory(c, cfg))
}

// accelWhyZh is why KVM is not used, in Chinese: the vm package records
// and reports it in English (accel.json, its errors), so the causes it
// writes are said here; another one is quoted as it is, marked as the
// recorded text.
func accelWhyZh(why string) string {
	switch {
	case strings.HasPrefix(why, "KVM boot failed: the guest made no progress"):
		return "用 KVM 启动失败：虚拟机没有进展，QEMU 启动后控制台一直是空的（能用的 KVM 不到一秒就有输出）"
	case strings.HasPrefix(why, "no usable /dev/kvm"):
		return "没有可用的 /dev/kvm（" + strings.TrimPrefix(why, "no usable /dev/kvm: ") + "）"
	case why == "LAB_VM_ACCEL=tcg":
		return why
	}
	return "记录的原因：" + why
}

func orWord(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// checkMemory: free memory against the experiment guests and, when
// --terminals is a number, the learners' guests (auto sizes itself).
func checkMemory(c Config, cfg vm.Config) finding {
	avail := vm.MemAvailableMiB()
	guests := c.Sandbox.Guests
	if guests <= 0 {
		guests = vm.DefaultGuests(cfg.MemoryMiB)
	}
	per := int64(cfg.MemoryMiB + 64) // QEMU adds about 64 MiB to the guest's RAM
	need := int64(guests) * per
	what, whatZh := fmt.Sprintf("%d experiment guest(s)", guests), fmt.Sprintf("%d 台实验虚拟机", guests)
	switch {
	case c.Terminals > 0:
		need += int64(c.Terminals) * per
		what += fmt.Sprintf(" and %d learner terminals", c.Terminals)
		whatZh += fmt.Sprintf("和 %d 个学习者终端", c.Terminals)
	case c.Terminals == TerminalsAuto:
		sz := terminal.AutoTerminals(guests, c.Sandbox.VMSharedRAM)
		what += fmt.Sprintf(" (terminals auto: %d fit)", sz.Max)
		whatZh += fmt.Sprintf("（终端 auto：可容纳 %d 个）", sz.Max)
	}
	if avail > 0 && avail < need {
		return finding{Level: levelWarn, Check: "memory",
			En:    fmt.Sprintf("%d MiB available, %s need about %d MiB: guests fail to start or the OOM killer ends them", avail, what, need),
			Zh:    fmt.Sprintf("可用内存 %d MiB，%s 大约需要 %d MiB：虚拟机会启动失败或被 OOM killer 杀掉", avail, whatZh, need),
			FixEn: "fewer --guests or --terminals (or --terminals auto), a smaller LAB_VM_MEMORY (112 MiB is the measured minimum), or more RAM",
			FixZh: "减少 --guests 或 --terminals（或用 --terminals auto），减小 LAB_VM_MEMORY（实测最少 112 MiB），或者加内存。"}
	}
	return finding{Level: levelOK, Check: "memory", En: fmt.Sprintf("%d MiB available for %s (about %d MiB)", avail, what, need),
		Zh: fmt.Sprintf("可用内存 %d MiB，%s 约需 %d MiB", avail, whatZh, need)}
}

// checkKeptDisk: the disk under the kept machines' folder holds their
// budget.
func checkKeptDisk(c Config) []finding {
	if c.Keep.Expire <= 0 || c.Terminals == 0 {
		return nil
	}
	dir := c.Keep.Dir
	if dir == "" {
		dir = filepath.Join(filepath.Dir(c.DBPath), "kept-machines")
	}
	at := dir // the folder, or the nearest one above it that exists
	for {
		if _, err := os.Stat(at); err == nil || filepath.Dir(at) == at {
			break
		}
		at = filepath.Dir(at)
	}
	free, ok := freeBytes(at)
	if !ok {
		return nil
	}
	budget := float64(int64(c.Keep.TotalMiB) << 20)
	usedBytes, _ := (&terminal.Keep{Dir: dir}).Usage() // what they take already counts as theirs
	used := float64(usedBytes)
	if c.Keep.TotalMiB > 0 && free+used < budget {
		return []finding{{Level: levelWarn, Check: "disk",
			En:    fmt.Sprintf("%s: %d MiB free, kept machines may take %d MiB (--keep-total-max): saves fail when the disk fills first", dir, int64(free)>>20, c.Keep.TotalMiB),
			Zh:    fmt.Sprintf("%s：剩余 %d MiB，保留的机器最多可占 %d MiB（--keep-total-max）：磁盘先满时保存会失败", dir, int64(free)>>20, c.Keep.TotalMiB),
			FixEn: "lower --keep-total-max below the free space, or put --keep-dir on a larger disk",
			FixZh: "把 --keep-total-max 调到剩余空间以下，或者把 --keep-dir 放到更大的磁盘上。"}}
	}
	return []finding{{Level: levelOK, Check: "disk", En: fmt.Sprintf("%s: %d MiB free for kept machines (budget %d MiB)", dir, int64(free)>>20, c.Keep.TotalMiB),
		Zh: fmt.Sprintf("%s：保留机器可用 %d MiB（预算 %d MiB）", dir, int64(free)>>20, c.Keep.TotalMiB)}}
}

// checkWorkers: workers join at --workers-listen (the lab cannot reach
// them; they reach it): the address is free and their keys are readable.
func checkWorkers(c sandboxConfig) []finding {
	var fs []finding
	if ln, err := net.Listen("tcp", c.WorkersListen); err != nil {
		fs = append(fs, finding{Level: levelFail, Check: "workers",
			En:    fmt.Sprintf("workers cannot join: cannot listen on %s: %v", c.WorkersListen, err),
			Zh:    fmt.Sprintf("worker 机器无法加入：无法在 %s 上监听：%v", c.WorkersListen, err),
			FixEn: "stop what listens there, or another --workers-listen (and the workers' --join)",
			FixZh: "停止在那里监听的进程，或者换一个 --workers-listen（worker 的 --join 也要改）。"})
	} else {
		ln.Close()
		fs = append(fs, finding{Level: levelOK, Check: "workers", En: c.WorkersListen + " is free for workers to join", Zh: c.WorkersListen + " 可供 worker 机器加入"})
	}
	if file, ok := strings.CutPrefix(c.NatsNkeys, "@"); ok {
		if _, err := workerKeys(c.NatsNkeys); err != nil {
			fs = append(fs, finding{Level: levelFail, Check: "workers", En: fmt.Sprintf("the workers' keys %s: %v", file, err),
				Zh: fmt.Sprintf("worker 机器的密钥 %s：%v", file, err), FixEn: "one NAME=U… line per worker (docs/operations.md, Add a worker)",
				FixZh: "每台 worker 一行 NAME=U…（见 docs/operations.md 的 Add a worker 一节）。"})
		}
	}
	return fs
}
