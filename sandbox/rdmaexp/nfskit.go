package rdmaexp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmalab/rdmalab/machines/demanddisk"
)

// NFS over RDMA plumbing for lesson 08: the kernel's NFS server (knfsd)
// set up through its own interfaces, the kernel's NFSv4 client mounted by
// mount(2), and the clean-up that removes both — run by a guard process
// that outlives the experiment, as nvmeof's does.
//
// No nfs-utils user space: rpc.nfsd only writes /proc/fs/nfsd/{versions,
// portlist,threads}; exportfs and rpc.mountd only answer the kernel's
// export-cache upcalls (/proc/net/rpc/*/channel); rpcbind is needed by
// NFSv2/3 alone; mount.nfs resolves the server's name and passes addr= and
// clientaddr= to mount(2). The experiment writes the same files and makes
// the same call — Debian's nfs-kernel-server would add rpcbind, libtirpc,
// libevent, keyutils and their helpers to a guest image that lives in RAM,
// and the files are what the lesson wants to show.

const (
	// nfsDir holds the lab's export (a tmpfs) and its mount point: the
	// clean-up unmounts only what is under it.
	nfsDir    = "/run/rdmalab-nfs"
	nfsExport = nfsDir + "/export"
	nfsMount  = nfsDir + "/mnt"
	nfsFile   = "big"
	nfsdFS    = "/proc/fs/nfsd"
	// nfsRDMAPort is IANA's "nfsrdma" port (RFC 8267), nfsTCPPort NFS's.
	nfsRDMAPort = 20049
	nfsTCPPort  = 2049
	// nfsDomain is the export's client name in the kernel's caches.
	nfsDomain = "rdmalab"
	// nfsExportFlags: ro (1), insecure (2), no_subtree_check (0x400) and
	// fsid= (0x2000, a tmpfs has no UUID) — include/uapi/linux/nfsd/export.h.
	nfsExportFlags = 0x1 | 0x2 | 0x400 | 0x2000
	// nfsLock: see lockFile.
	nfsLock = "/run/rdmalab-nfs.lock"
	// nfsGraceSeconds is the shortest NFSv4 grace period the server allows.
	nfsGraceSeconds = 10
)

// nfsModules are loaded in this order: the server, the RPC-over-RDMA
// transport of both ends (rpcrdma is xprtrdma and svcrdma), the client.
var nfsModules = []string{"nfsd", "rpcrdma", "nfsv4"}

// nfsUnload is every module those bring in, dependents first; only those
// absent before the run are removed.
var nfsUnload = []string{"nfsv4", "nfsd", "rpcrdma", "nfs", "lockd", "auth_rpcgss", "nfs_acl",
	"grace", "sunrpc", "fscache", "netfs", "dns_resolver"}

// loadNFSModules loads the modules and mounts the nfsd filesystem (the
// server's control files) if it is not mounted.
func loadNFSModules(ctx context.Context) error {
	// The module files are on the guest's on-demand disk (modules.dep,
	// in the initramfs, names them there).
	if err := demanddisk.Mount(ctx); err != nil {
		return err
	}
	for _, m := range nfsModules {
		if moduleLoaded(m) {
			continue
		}
		if out, err := exec.CommandContext(ctx, "modprobe", m).CombinedOutput(); err != nil {
			return fmt.Errorf("modprobe %s: %w: %s (this kernel needs CONFIG_NFSD, CONFIG_NFSD_V4, CONFIG_SUNRPC_XPRT_RDMA and CONFIG_NFS_V4 as modules)", m, err, tail(string(out)))
		}
	}
	if _, err := os.Stat(filepath.Join(nfsdFS, "portlist")); err != nil {
		if err := unix.Mount("nfsd", nfsdFS, "nfsd", 0, ""); err != nil {
			return fmt.Errorf("mount the nfsd filesystem on %s: %w", nfsdFS, err)
		}
	}
	return nil
}

// startNFSServer makes the export — a tmpfs holding one sparse file of
// size bytes — starts knfsd for NFSv4.1 on TCP port 2049 and RDMA port
// 20049 and fills the export caches for client addresses clients (what
// rpc.mountd would answer). It returns the portlist as the kernel shows it.
func startNFSServer(size int64, clients []string) (string, error) {
	if err := os.MkdirAll(nfsExport, 0o755); err != nil {
		return "", err
	}
	if err := os.MkdirAll(nfsMount, 0o755); err != nil {
		return "", err
	}
	if err := unix.Mount("tmpfs", nfsExport, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=1m,nr_inodes=16"); err != nil {
		return "", fmt.Errorf("mount a tmpfs on %s: %w", nfsExport, err)
	}
	// sparse: tmpfs serves the holes as zeros without holding them in RAM
	// (the guest has 256 MiB); NFSv4.1 has no READ_PLUS, so every byte
	// still crosses the transport
	f, err := os.Create(filepath.Join(nfsExport, nfsFile))
	if err != nil {
		return "", err
	}
	err = f.Truncate(size)
	f.Close()
	if err != nil {
		return "", fmt.Errorf("make the %d-byte file: %w (the export is a tmpfs)", size, err)
	}
	ctl := func(name, v string) error {
		if err := os.WriteFile(filepath.Join(nfsdFS, name), []byte(v+"\n"), 0o644); err != nil {
			return fmt.Errorf("write %q to %s: %w", v, filepath.Join(nfsdFS, name), err)
		}
		return nil
	}
	exp := strconv.FormatInt(time.Now().Add(24*time.Hour).Unix(), 10)
	steps := []func() error{
		// what rpc.nfsd -N 2 -N 3 -V 4.1 would write, before the
		// server starts (versions and times are fixed from then on)
		func() error { return ctl("versions", "-2 -3 +4 +4.1 +4.2") },
		func() error { return ctl("nfsv4gracetime", strconv.Itoa(nfsGraceSeconds)) },
		func() error { return ctl("nfsv4leasetime", strconv.Itoa(nfsGraceSeconds)) },
		func() error { return ctl("portlist", fmt.Sprintf("rdma %d", nfsRDMAPort)) },
		func() error { return ctl("portlist", fmt.Sprintf("tcp %d", nfsTCPPort)) },
		func() error { return ctl("threads", "4") },
	}
	// the export caches, as rpc.mountd answers the kernel's upcalls: the
	// client's address → domain; (domain, fsid 0) → path, the NFSv4
	// root; (domain, path) → the export's flags
	for _, c := range clients {
		steps = append(steps, func() error { return nfsCache("auth.unix.ip", "nfsd "+c+" "+exp+" "+nfsDomain) })
	}
	steps = append(steps,
		func() error { return nfsCache("nfsd.fh", nfsDomain+" 1 \\x00000000 "+exp+" "+nfsExport) },
		func() error {
			return nfsCache("nfsd.export", fmt.Sprintf("%s %s %s %d 65534 65534 0", nfsDomain, nfsExport, exp, nfsExportFlags))
		},
	)
	for _, s := range steps {
		if err := s(); err != nil {
			return "", err
		}
	}
	b, err := os.ReadFile(filepath.Join(nfsdFS, "portlist"))
	return strings.TrimSpace(string(b)), err
}

// nfsCache writes one entry to a sunrpc cache channel.
func nfsCache(cache, line string) error {
	p := filepath.Join("/proc/net/rpc", cache, "channel")
	if err := os.WriteFile(p, []byte(line+"\n"), 0o600); err != nil {
		return fmt.Errorf("write %q to %s: %w", line, p, err)
	}
	return nil
}

// waitNFSGrace waits for the NFSv4 grace period to end (reading
// v4_end_grace says Y): until then the server refuses OPEN so that clients
// of a restarted server can reclaim their state first.
func waitNFSGrace(ctx context.Context) error {
	for deadline := time.Now().Add((nfsGraceSeconds + 20) * time.Second); ; {
		b, err := os.ReadFile(filepath.Join(nfsdFS, "v4_end_grace"))
		if err == nil && strings.TrimSpace(string(b)) == "Y" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the NFSv4 grace period did not end (%s/v4_end_grace: %q, %v)", nfsdFS, b, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// nfsMountOptions is the option string for mount(2): what `mount -t nfs4
// -o vers=4.1,rdma,port=20049 server:/ dir` makes mount.nfs pass (it adds
// the resolved addr= and clientaddr=).
func nfsMountOptions(transport, server string) string {
	tr := fmt.Sprintf("proto=tcp,port=%d", nfsTCPPort)
	if transport == "rdma" {
		tr = fmt.Sprintf("rdma,port=%d", nfsRDMAPort)
	}
	return fmt.Sprintf("vers=4.1,%s,addr=%s,clientaddr=%s", tr, server, server)
}

// mountNFS mounts the export over transport.
func mountNFS(transport, server string) (string, error) {
	opts := nfsMountOptions(transport, server)
	if err := unix.Mount(server+":/", nfsMount, "nfs4", unix.MS_RDONLY, opts); err != nil {
		return opts, fmt.Errorf("mount -t nfs4 -o %s %s:/ %s: %w", opts, server, nfsMount, err)
	}
	return opts, nil
}

// nfsMountView is the lab's NFS mount as the kernel shows it: the proto=
// and port= of its options in /proc/self/mountstats.
func nfsMountView() (proto, port string, ok bool) {
	b, err := os.ReadFile("/proc/self/mountstats")
	if err != nil {
		return "", "", false
	}
	on := false
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "device ") {
			on = strings.Contains(l, " mounted on "+nfsMount+" with fstype nfs")
			continue
		}
		if f := strings.TrimSpace(l); on && strings.HasPrefix(f, "opts:") {
			for _, o := range strings.Split(strings.TrimSpace(strings.TrimPrefix(f, "opts:")), ",") {
				k, v, _ := strings.Cut(o, "=")
				switch k {
				case "proto":
					proto = v
				case "port":
					port = v
				}
			}
			return proto, port, true
		}
	}
	return "", "", false
}

// umountNFS unmounts the lab's mounts under nfsDir, deepest first; a
// mount still busy is forced (its outstanding RPCs fail) and then
// detached.
func umountNFS() error {
	var errs []error
	mounts := labNFSMounts()
	for i := len(mounts) - 1; i >= 0; i-- {
		m := mounts[i]
		if err := unix.Unmount(m, 0); err == nil || errors.Is(err, unix.EINVAL) {
			continue
		}
		if err := unix.Unmount(m, unix.MNT_FORCE); err == nil {
			continue
		}
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil {
			errs = append(errs, fmt.Errorf("umount %s: %w", m, err))
		}
	}
	return errors.Join(errs...)
}

// labNFSMounts lists the mount points under nfsDir, in mount order.
func labNFSMounts() []string {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 2 && strings.HasPrefix(f[1], nfsDir+"/") {
			out = append(out, f[1])
		}
	}
	return out
}

// stopNFSServer forgets the lab's export entries, stops knfsd's threads
// (with none the server closes its listeners) and unmounts the nfsd
// filesystem when the run mounted it (unmountFS).
func stopNFSServer(unmountFS bool) error {
	if _, err := os.Stat(filepath.Join(nfsdFS, "threads")); err != nil {
		return nil // no server control files: nothing runs
	}
	var errs []error
	now := strconv.FormatInt(time.Now().Unix(), 10)
	for _, c := range []string{"nfsd.export", "nfsd.fh", "auth.unix.ip"} {
		// exportfs -f: entries older than now are dropped
		if err := os.WriteFile(filepath.Join("/proc/net/rpc", c, "flush"), []byte(now+"\n"), 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := os.WriteFile(filepath.Join(nfsdFS, "threads"), []byte("0\n"), 0o644); err != nil {
		errs = append(errs, fmt.Errorf("stop nfsd: %w", err))
	}
	if unmountFS {
		if err := unix.Unmount(nfsdFS, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			errs = append(errs, fmt.Errorf("umount %s: %w", nfsdFS, err))
		}
	}
	return errors.Join(errs...)
}

// nfsdThreads counts knfsd's kernel threads (comm "nfsd").
func nfsdThreads() int {
	n := 0
	dirs, _ := filepath.Glob("/proc/[0-9]*/comm")
	for _, d := range dirs {
		if b, err := os.ReadFile(d); err == nil && strings.TrimSpace(string(b)) == "nfsd" {
			n++
		}
	}
	return n
}

// nfsExports counts the lab's entries in the kernel's export cache.
func nfsExports() int {
	b, err := os.ReadFile("/proc/net/rpc/nfsd.export/content")
	if err != nil {
		return 0
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "#") && strings.Contains(l, nfsDir) {
			n++
		}
	}
	return n
}

// nfsLeft counts what the lab's NFS runs may leave behind: mounts under
// nfsDir, export entries, nfsd threads, and the modules of unload that are
// loaded.
func nfsLeft(unload []string) (mounts, exports, threads, mods int) {
	for _, m := range unload {
		if moduleLoaded(m) {
			mods++
		}
	}
	return len(labNFSMounts()), nfsExports(), nfsdThreads(), mods
}

// cleanNFS unmounts, stops the server and unloads modules (those of
// unload, absent before the run). Idempotent: a run calls it first too.
func cleanNFS(unload []string) error {
	err := umountNFS()
	unmountFS := false
	for _, m := range unload {
		unmountFS = unmountFS || m == "nfsd"
	}
	err = errors.Join(err, stopNFSServer(unmountFS))
	// nfsd's threads exit after their current request
	for deadline := time.Now().Add(30 * time.Second); nfsdThreads() > 0 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	return errors.Join(err, unloadModules(unload))
}

const helperNFSGuard = "nfs-guard"

// nfsGuardHelper is the NFS run's clean-up guard (see runUnloadGuard).
func nfsGuardHelper(ctx context.Context, in io.Reader, out io.Writer) error {
	return runUnloadGuard(in, out, nfsUnload, nfsLock, "NFS", cleanNFS)
}
