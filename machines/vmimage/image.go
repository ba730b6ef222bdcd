// Package vmimage builds the lab guest's image on the host: a kernel with
// rdma_rxe and its modules, busybox, iproute2, rdma-core, perftest, lesson
// 08's UCX, libfabric and Open MPI (upper.go) and the labagent binary (the agent without the web and Markdown stack), from this machine's Debian packages, packed into an
// initramfs (cpio) next to the kernel. It also says what the machine lacks
// (Preflight, MissingError). It runs on the host, at build time.
package vmimage

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/rdmalab/rdmalab/internal/fsutil"
	"github.com/rdmalab/rdmalab/machines/vmguest/initscript"
	"github.com/rdmalab/rdmalab/machines/vmproto"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// imageFormat changes whenever the layout of the image changes, so a new
// labserver rebuilds images made by an older one.
const imageFormat = "rdmalab-vm-image/4" // 2: labagent instead of labserver; 3: the learner user; 4: the on-demand disk (lesson 08's user space and on-demand modules)

// guestPrograms must be in the guest: the experiments and the lab's own
// tools call them. dash is /bin/sh (Debian's busybox-static prefers its own
// applets over $PATH, so its sh would run busybox's limited ip).
var guestPrograms = []string{
	"dash", "ip", "rdma", "ibv_devices", "ibv_devinfo",
	"ib_write_lat", "ib_send_lat", "ib_read_lat", "ib_write_bw", "ib_send_bw",
	"qperf",
	"strace",  // the syscalls experiment counts system calls per message with it
	"tc",      // lesson 02: netem loss on the veth path, reset after every run; lesson 05: drop packets of one QP (clsact + u32 + gact)
	"rping",   // lesson 03: rdma_cm connects (rdmacm-utils)
	"tcpdump", // the learner's terminal (::terminal): watch RoCEv2 on the veth pair
	"nvme",    // lesson 08: NVMe over Fabrics, `nvme connect -t rdma|tcp` (nvme-cli)
}

// optionalPrograms are copied when present: handy in `labserver vm shell`.
var optionalPrograms = []string{"bash", "ibv_rc_pingpong", "ibv_ud_pingpong", "ib_read_bw", "capsh", "setpriv", "prlimit"}

// guestModules are loaded in this order before the agent says it is ready;
// --show-depends puts each module's dependencies before it. crc32_generic
// is a hidden dependency of rdma_rxe (it asks the crypto API for "crc32"),
// so it comes first. sch_netem (lesson 02's loss sweep) is small and must be
// there before the first run: the guest has no modprobe for the kernel to
// call when tc asks for a netem qdisc.
var guestModules = []string{"virtio_pci", "virtio_console", "crc32_generic", "rdma_rxe", "veth", "sch_netem"}

// lateModules are loaded after the agent is ready, off the boot's critical
// path: rdma_ucm (with rdma_cm, ib_cm, iw_cm, configfs) serves rdma_cm
// users (qperf -cm1, rping), which no experiment starts in the first second.
var lateModules = []string{"rdma_ucm", "sch_ingress", "cls_u32", "act_gact"}

// demandModules are in the image but in no load list: the experiment that
// needs them loads them (busybox modprobe, with the modules.dep depmod
// wrote) and unloads them after, so a guest that never runs it pays
// neither their boot time nor their memory. Lesson 08's NVMe over Fabrics:
// the target (nvmet over RDMA and TCP), the host (nvme over RDMA and TCP)
// and null_blk, the namespace's block device. Lesson 08's NFS over RDMA:
// the server (nfsd), the client (nfsv4) and the RPC-over-RDMA transport
// of both (rpcrdma: xprtrdma and svcrdma). Their files are on the
// on-demand disk (disk.go; with them 8 MB more of the initramfs would sit
// in every guest's RAM), so an experiment mounts it
// (demanddisk.Mount) before its modprobe; modules.dep stays in the
// initramfs.
var demandModules = []string{"nvmet_rdma", "nvmet_tcp", "nvme_rdma", "nvme_tcp", "null_blk", "nfsd", "nfsv4", "rpcrdma"}

// diskReaderModules read the on-demand disk, so they are on-demand
// modules kept in the initramfs.
var diskReaderModules = []string{"virtio_blk", "squashfs"}

// programDirs is where programs are looked up (root's PATH, merged /usr).
var programDirs = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// Image is a built guest image in the cache directory.
type Image struct {
	Dir     string `json:"-"`
	Format  string `json:"format"`
	Hash    string `json:"hash"`    // of all inputs; a change means rebuild
	Release string `json:"release"` // guest kernel release
	Kernel  string `json:"kernel"`  // file name in Dir: vmlinux (PVH) or vmlinuz
	Initrd  string `json:"initrd"`  // file name in Dir
	Size    int64  `json:"size"`    // initramfs bytes
	// Disk is the on-demand disk's file name in Dir (disk.go), "" for an
	// image without one; DiskSize its bytes.
	Disk     string `json:"disk,omitempty"`
	DiskSize int64  `json:"diskSize,omitempty"`
	Built    string `json:"built"` // RFC 3339
}

// KernelPath is the kernel QEMU boots.
func (im *Image) KernelPath() string { return filepath.Join(im.Dir, im.Kernel) }

// InitrdPath is the initramfs QEMU loads.
func (im *Image) InitrdPath() string { return filepath.Join(im.Dir, im.Initrd) }

// DiskPath is the on-demand disk QEMU attaches read-only, "" if the image
// has none.
func (im *Image) DiskPath() string {
	if im.Disk == "" {
		return ""
	}
	return filepath.Join(im.Dir, im.Disk)
}

// Files are the file names in Dir that make the image (the manifest
// first): what a copy of the image needs.
func (im *Image) Files() []string {
	f := []string{"manifest.json", im.Kernel, im.Initrd}
	if im.Disk != "" {
		f = append(f, im.Disk)
	}
	return f
}

// BuildOptions says where the image goes and what goes into it.
type BuildOptions struct {
	Dir      string    // cache directory (created)
	Agent    string    // the guest's agent binary, labagent; default: AgentBinary()
	Force    bool      // rebuild even when up to date
	Progress io.Writer // one line per step; nil = quiet
	// Extra puts more binaries in the image: guest path (usr/bin/NAME) →
	// host file, with the libraries they link. Benchmarks use it; the lab
	// needs none.
	Extra map[string]string
}

// AgentName is the agent binary the guest runs; `make build` puts it beside
// labserver (go build -o bin/labagent ./cmd/labagent).
const AgentName = "labagent"

// AgentBinary is the labagent beside this executable (or this executable
// if it is labagent), the binary the guest image is built with.
func AgentBinary() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find the labagent binary: %w", err)
	}
	if filepath.Base(exe) == AgentName {
		return exe, nil
	}
	agent := filepath.Join(filepath.Dir(exe), AgentName)
	if _, err := os.Stat(agent); err != nil {
		return "", fmt.Errorf("the Soft-RoCE guest runs labagent, which is not beside %s (make build builds both; or go build -o %s ./cmd/labagent): %w", exe, agent, err)
	}
	return agent, nil
}

// plan is everything the image will contain, resolved on the host.
type plan struct {
	kernel  Kernel
	files   tree            // everything except the module index made by depmod
	disk    tree            // the on-demand disk's content (disk.go)
	modules []string        // host paths of the .ko files, in load order
	late    int             // modules[late:demand] are loaded after the agent is ready
	demand  int             // modules[demand:] are loaded by the experiments that need them
	onDisk  map[string]bool // those of modules[demand:] whose files go onto the disk
	inputs  []string        // host paths whose size+mtime decide a rebuild
	agent   string
	hash    string
	ldd     map[string]lddResult // resolved ahead, see prefetchLdd
}

// LoadImage returns the image in dir if one was built there.
func LoadImage(dir string) (*Image, error) {
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, err
	}
	var im Image
	if err := json.Unmarshal(b, &im); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	im.Dir = dir
	for _, f := range im.Files()[1:] {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return nil, fmt.Errorf("image incomplete: %w", err)
		}
	}
	return &im, nil
}

// Build makes the guest image in opt.Dir unless an image built from the same
// inputs is already there. It reports whether it built.
func Build(ctx context.Context, opt BuildOptions) (*Image, bool, error) {
	start := time.Now()
	say := func(format string, a ...any) {
		if opt.Progress != nil {
			fmt.Fprintf(opt.Progress, "vm image: "+format+"\n", a...)
		}
	}
	if opt.Agent == "" {
		agent, err := AgentBinary()
		if err != nil {
			return nil, false, err
		}
		opt.Agent = agent
	}
	if err := os.MkdirAll(opt.Dir, 0o755); err != nil {
		return nil, false, fmt.Errorf("image dir: %w", err)
	}
	unlock, err := lockDir(opt.Dir)
	if err != nil {
		return nil, false, err
	}
	defer unlock()

	p, err := makePlan(ctx, opt.Agent, opt.Extra)
	if err != nil {
		return nil, false, err
	}
	if old, err := LoadImage(opt.Dir); err == nil && old.Hash == p.hash && old.Format == imageFormat && !opt.Force {
		say("up to date (kernel %s) in %s", old.Release, opt.Dir)
		return old, false, nil
	}
	say("building for kernel %s: %d files, %d modules, labagent %s", p.kernel.Release, len(p.files), len(p.modules), opt.Agent)

	im := &Image{Dir: opt.Dir, Format: imageFormat, Hash: p.hash, Release: p.kernel.Release, Initrd: "initramfs.cpio"}
	t := time.Now()
	if err := cachedVmlinux(ctx, p.kernel.Image, filepath.Join(opt.Dir, "vmlinux")); err != nil {
		// Still bootable, only slower: QEMU runs the kernel's own decompressor.
		say("no PVH kernel (%v); booting the compressed kernel", err)
		if err := fsutil.CopyFile(p.kernel.Image, filepath.Join(opt.Dir, "vmlinuz")); err != nil {
			return nil, false, err
		}
		im.Kernel = "vmlinuz"
	} else {
		im.Kernel = "vmlinux"
		say("uncompressed vmlinux ready (%.1f s)", time.Since(t).Seconds())
	}

	t = time.Now()
	stage, err := os.MkdirTemp(opt.Dir, "stage-")
	if err != nil {
		return nil, false, fmt.Errorf("stage dir: %w", err)
	}
	defer os.RemoveAll(stage)
	if err := addModules(ctx, p, stage); err != nil {
		return nil, false, err
	}
	say("staged %d kernel modules and ran depmod (%.1f s)", len(p.modules), time.Since(t).Seconds())
	if n, ok := stripAgent(ctx, p, stage); ok {
		say("labagent without DWARF for the guest: %d MB (stack traces keep working)", n>>20)
	}
	// After the modules: some of their files are on the disk too.
	if err := p.linkDisk(); err != nil {
		return nil, false, err
	}

	t = time.Now()
	out := filepath.Join(opt.Dir, im.Initrd)
	f, err := os.Create(out + ".tmp")
	if err != nil {
		return nil, false, fmt.Errorf("create initramfs: %w", err)
	}
	err = writeCpio(f, p.files)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(out+".tmp", out)
	}
	if err != nil {
		os.Remove(out + ".tmp")
		return nil, false, fmt.Errorf("write initramfs: %w", err)
	}
	if fi, err := os.Stat(out); err == nil {
		im.Size = fi.Size()
	}
	say("wrote initramfs.cpio, %d MB uncompressed (%.1f s)", im.Size>>20, time.Since(t).Seconds())

	if len(p.disk) > 0 {
		t = time.Now()
		im.Disk = DiskFile
		if err := writeDisk(ctx, p.disk, stage, im.DiskPath()); err != nil {
			return nil, false, fmt.Errorf("write the on-demand disk: %w", err)
		}
		if fi, err := os.Stat(im.DiskPath()); err == nil {
			im.DiskSize = fi.Size()
		}
		say("wrote %s, %d files, %d MB (squashfs, %s; %d MB unpacked) (%.1f s)", DiskFile, len(p.disk), im.DiskSize>>20, diskCompression, p.disk.size()>>20, time.Since(t).Seconds())
	}

	im.Built = time.Now().UTC().Format(time.RFC3339)
	b, _ := json.MarshalIndent(im, "", "  ")
	if err := fsutil.WriteFileAtomic(filepath.Join(opt.Dir, "manifest.json"), b); err != nil {
		return nil, false, err
	}
	say("ready in %s (%.1f s)", opt.Dir, time.Since(start).Seconds())
	return im, true, nil
}

// makePlan resolves every file the guest needs and hashes the inputs.
func makePlan(ctx context.Context, agent string, extra map[string]string) (*plan, error) {
	k, err := FindKernel("/boot", "/lib/modules")
	var missing []*MissingError
	var kme *MissingError
	if errors.As(err, &kme) {
		missing = append(missing, kme)
	} else if err != nil {
		return nil, err
	}
	p := &plan{kernel: k, files: tree{}, disk: tree{}, agent: agent}
	t := p.files
	for _, d := range []string{"usr/bin", "usr/sbin", "usr/lib/x86_64-linux-gnu", "usr/lib64", "etc", "proc", "sys", "dev", "run", "root", "var", "mnt"} {
		t.dir(d, 0o755)
	}
	t.dir("tmp", 0o777|os.ModeSticky)
	t.symlink("bin", "usr/bin")
	t.symlink("sbin", "usr/sbin")
	t.symlink("lib", "usr/lib")
	t.symlink("lib64", "usr/lib64")
	t.symlink("var/run", "../run")
	// The kernel opens /dev/console for init before anything is mounted.
	t.charDev("dev/console", 5, 1, 0o600)
	t.charDev("dev/null", 1, 3, 0o666)

	for _, tool := range []string{"modprobe", "depmod", "xz"} {
		if _, err := lookProgram(tool); err != nil {
			missing = append(missing, &MissingError{What: tool, Packages: []string{programPackage[tool]}})
		}
	}
	if err := checkDiskTool(); err != nil {
		missing = append(missing, err.(*MissingError))
	}
	// ldd starts a process per file; resolve them all at once, in parallel.
	var elves []string
	for _, name := range append(append(append(slices.Clone(guestPrograms), optionalPrograms...), upperPrograms...), "busybox") {
		if f, err := lookProgram(name); err == nil {
			elves = append(elves, f)
		}
	}
	provLibs, _ := filepath.Glob(providerGlob)
	p.prefetchLdd(ctx, append(append(append(elves, agent), provLibs...), upperLibraries()...))
	for _, name := range guestPrograms {
		if err := p.addProgram(ctx, name); err != nil {
			var me *MissingError
			if errors.As(err, &me) {
				missing = append(missing, me)
				continue
			}
			return nil, err
		}
	}
	if m := mergeMissing(missing); m != nil {
		return nil, m
	}
	for _, name := range optionalPrograms {
		var me *MissingError
		if err := p.addProgram(ctx, name); err != nil && !errors.As(err, &me) {
			return nil, err
		}
	}
	t.symlink("usr/bin/sh", "dash")
	if err := p.addBinary(ctx, agent, "usr/bin/"+AgentName); err != nil {
		return nil, fmt.Errorf("labagent binary for the guest: %w", err)
	}
	for guest, host := range extra {
		if err := p.addBinary(ctx, host, guest); err != nil {
			return nil, fmt.Errorf("%s for the guest: %w", guest, err)
		}
	}
	if err := p.addBusybox(ctx); err != nil {
		return nil, err
	}
	if err := p.addProvider(ctx); err != nil {
		return nil, err
	}
	if err := p.addCompiler(ctx); err != nil {
		return nil, err
	}
	if err := p.addUpper(ctx); err != nil {
		return nil, err
	}
	if err := p.planModules(ctx); err != nil {
		return nil, err
	}
	p.addEtc()
	p.inputs = append(p.inputs, k.Image)
	return p, p.hashInputs()
}

// lookProgram finds a program in the usual root PATH.
func lookProgram(name string) (string, error) {
	for _, d := range programDirs {
		f := filepath.Join(d, name)
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return f, nil
		}
	}
	return "", exec.ErrNotFound
}

// addProgram copies a program by name into /usr/bin with its libraries.
func (p *plan) addProgram(ctx context.Context, name string) error {
	f, err := lookProgram(name)
	if err != nil {
		pkg := programPackage[name]
		if pkg == "" {
			pkg = name
		}
		return &MissingError{What: name, Packages: []string{pkg}}
	}
	return p.addBinary(ctx, f, "usr/bin/"+name)
}

// addBinary copies an ELF file and the shared libraries ldd resolves for it.
func (p *plan) addBinary(ctx context.Context, host, guest string) error {
	return p.binaryInto(ctx, p.files, host, guest)
}

// binaryInto puts an ELF file into t (the initramfs or the on-demand
// disk) at guest, and each library it links that neither the initramfs
// nor t has yet into t.
func (p *plan) binaryInto(ctx context.Context, t tree, host, guest string) error {
	t.file(guest, host, 0o755)
	p.inputs = append(p.inputs, host)
	libs, err := p.libsOf(ctx, host)
	if err != nil {
		return err
	}
	for _, l := range libs {
		if g := guestLibPath(l); !p.files.has(g) && !t.has(g) {
			t.file(g, l, 0o755)
			p.inputs = append(p.inputs, l)
		}
	}
	return nil
}

// libsOf is lddLibs of host, resolved ahead by prefetchLdd when it was.
func (p *plan) libsOf(ctx context.Context, host string) ([]string, error) {
	r, ok := p.ldd[host]
	if !ok {
		r.libs, r.err = lddLibs(ctx, host)
	}
	return r.libs, r.err
}

// lddResult is the outcome of lddLibs for one file.
type lddResult struct {
	libs []string
	err  error
}

// prefetchLdd runs lddLibs on files, four at a time, into p.ldd.
func (p *plan) prefetchLdd(ctx context.Context, files []string) {
	p.ldd = make(map[string]lddResult, len(files))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for _, f := range files {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			libs, err := lddLibs(ctx, f)
			mu.Lock()
			p.ldd[f] = lddResult{libs, err}
			mu.Unlock()
		}()
	}
	wg.Wait()
}

// lddLibs lists the shared libraries of an ELF file as ldd resolves them on
// this machine (including the dynamic loader); nil for static binaries.
// It runs the dynamic loader's --list directly, which is what the ldd
// script does after several slower probes: one process instead of a shell
// and three loaders per file.
func lddLibs(ctx context.Context, file string) ([]string, error) {
	interp, dynamic, err := elfLoader(file)
	if err != nil {
		return nil, err
	}
	if !dynamic {
		return nil, nil // static: ld.so --list would crash on it
	}
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, interp, "--list", file)
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("ldd %s: %w: %s", file, err, strings.TrimSpace(errb.String()+out.String()))
	}
	var libs []string
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
			libs = append(libs, f[2])
		case len(f) >= 3 && f[1] == "=>" && f[2] == "not":
			return nil, fmt.Errorf("ldd %s: library %s not found", file, f[0])
		case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
			libs = append(libs, f[0]) // the dynamic loader
		}
	}
	return libs, nil
}

// defaultLoader lists shared libraries, which name no interpreter.
const defaultLoader = "/lib64/ld-linux-x86-64.so.2"

// elfLoader says whether file is dynamically linked and which loader
// resolves its libraries.
func elfLoader(file string) (interp string, dynamic bool, err error) {
	f, err := elf.Open(file)
	if err != nil {
		return "", false, fmt.Errorf("%s: %w", file, err)
	}
	defer f.Close()
	interp = defaultLoader
	for _, prog := range f.Progs {
		switch prog.Type {
		case elf.PT_DYNAMIC:
			dynamic = true
		case elf.PT_INTERP:
			b, err := io.ReadAll(prog.Open())
			if err != nil {
				return "", false, fmt.Errorf("%s: interpreter: %w", file, err)
			}
			interp = strings.TrimRight(string(b), "\x00")
		}
	}
	return interp, dynamic, nil
}

// guestLibPath maps a host library path onto the merged-/usr layout of the
// guest, keeping the name the loader asks for (the soname).
func guestLibPath(host string) string {
	p := path.Clean(host)
	for _, top := range []string{"/lib/", "/lib64/", "/bin/", "/sbin/"} {
		if strings.HasPrefix(p, top) {
			p = "/usr" + p
			break
		}
	}
	return cleanRel(p)
}

// addBusybox adds busybox and links every applet that no real program
// already provides (mount, modprobe, sleep, ... for the shell).
func (p *plan) addBusybox(ctx context.Context) error {
	bb, err := lookProgram("busybox")
	if err != nil {
		return &MissingError{What: "busybox", Packages: []string{"busybox-static"}}
	}
	if err := p.addBinary(ctx, bb, "usr/bin/busybox"); err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, bb, "--list").Output()
	if err != nil {
		return fmt.Errorf("busybox --list: %w", err)
	}
	for _, a := range strings.Fields(string(out)) {
		if a == "busybox" || p.files.has("usr/bin/"+a) || p.files.has("usr/sbin/"+a) {
			continue
		}
		p.files.symlink("usr/bin/"+a, "busybox")
	}
	return nil
}

// providerGlob matches the rxe user-space provider library.
const providerGlob = "/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav*.so"

// addProvider copies the rxe user-space provider. libibverbs dlopen()s it,
// so ldd of the programs never sees it.
func (p *plan) addProvider(ctx context.Context) error {
	const driver = "/etc/libibverbs.d/rxe.driver"
	libs, _ := filepath.Glob(providerGlob)
	if _, err := os.Stat(defaultLoader); err != nil {
		return &MissingError{What: "the dynamic loader " + defaultLoader, Packages: []string{"libc6"}}
	}
	if _, err := os.Stat(driver); err != nil || len(libs) == 0 {
		return &MissingError{What: "the rxe verbs provider (librxe-rdmav*.so)", Packages: []string{"ibverbs-providers"}}
	}
	p.files.file("etc/libibverbs.d/rxe.driver", driver, 0o644)
	p.inputs = append(p.inputs, driver)
	for _, l := range libs {
		if err := p.addBinary(ctx, l, guestLibPath(l)); err != nil {
			return err
		}
	}
	// glibc dlopen()s libgcc_s to unwind a thread in pthread_exit (rping's
	// threads end that way) and aborts without it; ldd never lists it.
	if _, err := os.Stat(libgccPath); err == nil {
		if err := p.addBinary(ctx, libgccPath, guestLibPath(libgccPath)); err != nil {
			return err
		}
	}
	return nil
}

const libgccPath = "/usr/lib/x86_64-linux-gnu/libgcc_s.so.1"

// planModules resolves the modules and their dependencies with the host's
// modprobe against the guest kernel's module tree.
func (p *plan) planModules(ctx context.Context) error {
	seen := map[string]bool{}
	all := append(append(append(slices.Clone(guestModules), lateModules...), diskReaderModules...), demandModules...)
	p.late, p.demand = -1, -1
	p.onDisk = map[string]bool{}
	diskFrom := -1 // modules[diskFrom:] are demandModules' own, off the disk readers
	for i, m := range all {
		if i == len(guestModules) {
			p.late = len(p.modules)
		}
		if i == len(guestModules)+len(lateModules) {
			p.demand = len(p.modules)
		}
		if i == len(guestModules)+len(lateModules)+len(diskReaderModules) {
			diskFrom = len(p.modules)
		}
		out, err := exec.CommandContext(ctx, "modprobe", "-S", p.kernel.Release, "--show-depends", m).Output()
		if err != nil {
			return fmt.Errorf("modprobe -S %s --show-depends %s: %w", p.kernel.Release, m, err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 || f[0] != "insmod" || seen[f[1]] {
				continue // "builtin X" needs nothing
			}
			seen[f[1]] = true
			p.modules = append(p.modules, f[1])
			p.inputs = append(p.inputs, f[1])
		}
	}
	if p.late < 0 {
		p.late = len(p.modules)
	}
	if p.demand < 0 {
		p.demand = len(p.modules)
	}
	if diskFrom >= 0 {
		for _, m := range p.modules[diskFrom:] {
			p.onDisk[m] = true
		}
	}
	for _, f := range []string{"modules.order", "modules.builtin", "modules.builtin.modinfo"} {
		p.inputs = append(p.inputs, filepath.Join(p.kernel.Modules, f))
	}
	return nil
}

// addModules copies the modules into stage (decompressing .ko.xz), runs
// depmod -b on it so busybox modprobe works in the guest shell, and adds the
// result plus the load order (/etc/rdmalab/modules) to the image.
func addModules(ctx context.Context, p *plan, stage string) error {
	rel := "lib/modules/" + p.kernel.Release
	var order []string
	for _, m := range p.modules {
		r, err := filepath.Rel("/lib/modules/"+p.kernel.Release, m)
		if err != nil || strings.HasPrefix(r, "..") {
			return fmt.Errorf("module %s is outside /lib/modules/%s", m, p.kernel.Release)
		}
		dst := filepath.Join(stage, rel, strings.TrimSuffix(r, ".xz"))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if strings.HasSuffix(m, ".ko.xz") {
			err = decompressXZ(ctx, m, dst)
		} else if strings.HasSuffix(m, ".ko") {
			err = fsutil.CopyFile(m, dst)
		} else {
			err = fmt.Errorf("module %s: unsupported compression (need .ko or .ko.xz)", m)
		}
		if err != nil {
			return err
		}
		order = append(order, "/"+rel+"/"+strings.TrimSuffix(r, ".xz"))
	}
	for _, f := range []string{"modules.order", "modules.builtin", "modules.builtin.modinfo"} {
		if err := fsutil.CopyFile(filepath.Join(p.kernel.Modules, f), filepath.Join(stage, rel, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if out, err := exec.CommandContext(ctx, "depmod", "-b", stage, p.kernel.Release).CombinedOutput(); err != nil {
		return fmt.Errorf("depmod -b: %w: %s", err, strings.TrimSpace(string(out)))
	}
	onDisk := map[string]bool{}
	for m := range p.onDisk {
		r, _ := filepath.Rel("/lib/modules/"+p.kernel.Release, m)
		onDisk[filepath.Join(stage, rel, strings.TrimSuffix(r, ".xz"))] = true
	}
	return filepath.WalkDir(filepath.Join(stage, rel), func(f string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		r, _ := filepath.Rel(stage, f)
		// the staged files are read when the archive (and the disk) is
		// written, before stage is removed
		if onDisk[f] {
			p.disk.file("usr/"+filepath.ToSlash(r), f, 0o644)
		} else {
			p.files.file("usr/"+filepath.ToSlash(r), f, 0o644)
		}
		return nil
	})
}

// stripAgent puts a copy of labagent without its DWARF sections in the
// image when objcopy (binutils, which gcc pulls in) is there: a quarter of
// the binary that the guest kernel would unpack at every boot for nothing
// (Go prints stack traces from its own tables, not from DWARF).
func stripAgent(ctx context.Context, p *plan, stage string) (int64, bool) {
	objcopy, err := lookProgram("objcopy")
	if err != nil {
		return 0, false
	}
	out := filepath.Join(stage, AgentName)
	if err := exec.CommandContext(ctx, objcopy, "--strip-debug", p.agent, out).Run(); err != nil {
		return 0, false
	}
	fi, err := os.Stat(out)
	if err != nil {
		return 0, false
	}
	p.files.file("usr/bin/"+AgentName, out, 0o755)
	return fi.Size(), true
}

func decompressXZ(ctx context.Context, src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return unxz(ctx, in, dst)
}

// addEtc writes the few configuration files the guest needs.
func (p *plan) addEtc() {
	t := p.files
	t.bytes("etc/passwd", []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\ntcpdump:x:104:104::/nonexistent:/bin/false\nlearner:x:1000:1000:learner:/home/learner:/usr/bin/bash\n"), 0o644) // Debian's tcpdump drops root for its own user; learner: the terminal's user (guestterm/terminal.go)
	t.bytes("etc/group", []byte("root:x:0:\nnogroup:x:65534:\ntcpdump:x:104:\nlearner:x:1000:\n"), 0o644)
	t.bytes("etc/nsswitch.conf", []byte("passwd: files\ngroup: files\nhosts: files\n"), 0o644)
	t.bytes("etc/hosts", []byte("127.0.0.1 localhost\n"), 0o644)
	list := func(mods []string) []byte {
		var b strings.Builder
		for _, m := range mods {
			b.WriteString(strings.TrimSuffix(guestModulePath(m), ".xz") + "\n")
		}
		return []byte(b.String())
	}
	t.bytes(vmproto.ModuleList, list(p.modules[:p.late]), 0o644)
	t.bytes("init", initscript.Script(guestModules), 0o755)
	t.bytes(vmproto.LateModuleList, list(p.modules[p.late:p.demand]), 0o644)
	p.addTerminfo()
	if ents, err := os.ReadDir("/etc/iproute2"); err == nil {
		for _, e := range ents {
			if e.Type().IsRegular() {
				src := filepath.Join("/etc/iproute2", e.Name())
				t.file("etc/iproute2/"+e.Name(), src, 0o644)
				p.inputs = append(p.inputs, src)
			}
		}
	}
}

func guestModulePath(host string) string { return "/" + guestLibPath(host) }

// hashInputs hashes the format, every input's path, size and mtime, the
// generated files, and the labagent binary's content (it is rebuilt often
// with the same size, and its mtime says little after a copy).
func (p *plan) hashInputs() error {
	h := sha256.New()
	fmt.Fprintln(h, imageFormat, p.kernel.Release)
	ins := slices.Clone(p.inputs)
	slices.Sort(ins)
	for _, f := range slices.Compact(ins) {
		if f == p.agent {
			// Its content is hashed below: `go build -o` rewrites the same
			// bytes with a new mtime, which must not remake the image (and
			// throw away the guest snapshot made from it).
			continue
		}
		fi, err := os.Stat(f)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				fmt.Fprintln(h, f, "absent")
				continue
			}
			return fmt.Errorf("stat %s: %w", f, err)
		}
		fmt.Fprintln(h, f, fi.Size(), fi.ModTime().UnixNano())
	}
	names := make([]string, 0, len(p.files))
	for n := range p.files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		e := p.files[n]
		fmt.Fprintln(h, n, e.kind, e.mode, e.src, e.target, len(e.data))
		h.Write(e.data)
	}
	// The on-demand disk is part of the image: a change to it makes a new
	// image (and so a new snapshot, whose guest has the new disk attached).
	for _, n := range p.disk.names() {
		e := p.disk[n]
		fmt.Fprintln(h, "disk", n, e.kind, e.mode, e.src, e.target, len(e.data))
		h.Write(e.data)
	}
	a, err := os.Open(p.agent)
	if err != nil {
		return fmt.Errorf("labagent binary: %w", err)
	}
	defer a.Close()
	if _, err := io.Copy(h, a); err != nil {
		return fmt.Errorf("hash labagent binary: %w", err)
	}
	p.hash = hex.EncodeToString(h.Sum(nil))
	return nil
}

// lockDir takes an exclusive lock on dir so two labservers (make run and a
// test, say) never write the same image at once.
func lockDir(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock image dir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock image dir: %w", err)
	}
	return func() { f.Close() }, nil
}

// Preflight checks that this machine can build and boot the guest (QEMU, a
// kernel with rdma_rxe, the programs and libraries) without building it. A
// *MissingError names what is missing and the apt-get command that fixes it.
func Preflight(ctx context.Context, agent string) error {
	if agent == "" {
		var err error
		if agent, err = AgentBinary(); err != nil {
			return err
		}
	}
	_, qerr := CheckQEMU("qemu-system-x86_64")
	_, perr := makePlan(ctx, agent, nil)
	var missing []*MissingError
	for _, err := range []error{qerr, perr} {
		var me *MissingError
		if errors.As(err, &me) {
			missing = append(missing, me)
		} else if err != nil {
			return err
		}
	}
	if m := mergeMissing(missing); m != nil {
		return m
	}
	return nil
}

// terminfoEntries are the terminal descriptions the guest carries: the
// learner's terminal is xterm.js with TERM=xterm-256color. Without its
// entry bash's readline knows nothing of the terminal: a command line
// longer than the screen scrolls sideways ("<…") instead of wrapping, and
// full-screen programs cannot draw.
var terminfoEntries = []string{"x/xterm-256color", "x/xterm", "l/linux", "v/vt100", "d/dumb"}

// terminfoDirs is where Debian's ncurses-base (priority required) keeps
// them; the guest reads them from /usr/share/terminfo, on ncurses' own path.
var terminfoDirs = []string{"/etc/terminfo", "/lib/terminfo", "/usr/share/terminfo"}

func (p *plan) addTerminfo() {
	for _, e := range terminfoEntries {
		for _, d := range terminfoDirs {
			src := filepath.Join(d, e)
			if fi, err := os.Stat(src); err == nil && fi.Mode().IsRegular() {
				p.files.file("usr/share/terminfo/"+e, src, 0o644)
				p.inputs = append(p.inputs, src)
				break
			}
		}
	}
}
