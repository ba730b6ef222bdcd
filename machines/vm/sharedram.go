package vm

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Guests that share the snapshot's memory (issue 45).
//
// The guest that becomes the snapshot runs with its RAM in a file
// (memory-backend-file, share=on): when it is saved, the migration
// carries only its devices (the x-ignore-shared capability skips RAM
// that lives in a shared file), and the file is its RAM. Every guest
// restored from that snapshot maps the same file with share=off:
// MAP_PRIVATE, copy-on-write from the page cache. What a guest reads is
// one copy for all guests; what it writes becomes its own page, never
// the file's and never another guest's. The file is never written after
// the save: its writer has exited before the file gets its name.
//
// Measured on QEMU 7.2 (TCG, 1 vCPU, 256 MiB, three guests): PSS per
// guest 198 → 68 MiB after the restore, 215 → 86 MiB after a shell ran;
// USS 193 → 50 and 210 → 67 (docs/architecture.md, "Guests share the
// snapshot's memory", has the figures and the alternatives).
//
// What QEMU 7.2 does not allow, and how we live without it:
//   - readonly=on with share=off maps the file read-only and makes the
//     RAM a ROM: the restored guest's writes are dropped and it hangs
//     (QEMU 8.2 turned that combination into private RAM). So QEMU opens
//     the file read-write; MAP_PRIVATE keeps every guest write out of it.
//   - x-ignore-shared is not a -global migration property in 7.2, so a
//     restore starts with -incoming defer and sets the capability over
//     QMP before migrate-incoming (Guest.resume).

// guestRAM says where one guest's RAM lives; nil: QEMU's own anonymous
// RAM (-m alone, PrivateRAM).
type guestRAM struct {
	// file is a memory-backend-file's path; "" is memory-backend-ram.
	file string
	// shared: share=on, the guest writes the file (the boot that becomes
	// the snapshot); otherwise a file is mapped copy-on-write.
	shared bool
}

// ramID names the guest's RAM block. A migration stream names its RAM
// blocks, so every guest that may load another's state (a snapshot, a
// kept machine) has its RAM under this one name, whatever backs it.
const ramID = "ram"

// args is the guest's memory backend options for a guest of sizeMiB.
func (r *guestRAM) args(sizeMiB int) []string {
	if r == nil {
		return nil
	}
	obj := fmt.Sprintf("memory-backend-ram,id=%s,size=%dM", ramID, sizeMiB)
	if r.file != "" {
		share := "off"
		if r.shared {
			share = "on"
		}
		obj = fmt.Sprintf("memory-backend-file,id=%s,size=%dM,share=%s,mem-path=%s", ramID, sizeMiB, share, qemuOptQuote(r.file))
	}
	return []string{"-object", obj, "-machine", "memory-backend=" + ramID}
}

// ramFor chooses a guest's RAM: restoring snap, booting (snap nil; the
// boot becomes a snapshot unless cfg.NoSnapshot), or a root shell.
// bootFile names the file a snapshotting boot writes.
func ramFor(cfg Config, snap *Snapshot, shell bool, bootFile func() string) *guestRAM {
	switch {
	case cfg.PrivateRAM || shell:
		return nil
	case snap != nil && snap.kept:
		// A kept machine's state holds what differs from its base file
		// (keepdiff.go), mapped copy-on-write as the snapshot's is; or
		// all its RAM (no base).
		return &guestRAM{file: snap.keptBase}
	case snap != nil && snap.RAMFile != "":
		return &guestRAM{file: snap.RAMFile}
	case snap != nil:
		return &guestRAM{} // a snapshot that holds its RAM itself
	case cfg.NoSnapshot:
		return &guestRAM{}
	default:
		return &guestRAM{file: bootFile(), shared: true}
	}
}

// bootRAMFile is a fresh name for a snapshotting boot's RAM file in dir,
// beside where the snapshot's will be (a rename, not a copy, makes it the
// snapshot's).
func bootRAMFile(dir, slot string) string {
	f, err := os.CreateTemp(dir, slot+".ram.*.tmp")
	if err != nil {
		// QEMU creates it; its error then names the directory.
		return filepath.Join(dir, slot+".ram.boot.tmp")
	}
	f.Close()
	return f.Name()
}

// sharedNames are the files of a shared-RAM snapshot of slot under key:
// named by key, so that a guest restoring one snapshot never reads
// another's state with this one's RAM while a new snapshot replaces it.
func sharedNames(slot, key string) (state, ram string) {
	return slot + "." + key + ".state", slot + "." + key + ".ram"
}

// removeStaleSnapshots removes slot's shared-RAM snapshot files in dir
// but keep's (base names). A guest that maps or reads one keeps it while
// it runs (the name goes, the file stays until it is closed).
func removeStaleSnapshots(dir, slot string, keep ...string) {
	var ms []string
	for _, ext := range []string{".ram", ".state"} {
		m, _ := filepath.Glob(filepath.Join(dir, slot+".*"+ext))
		ms = append(ms, m...)
	}
	for _, m := range ms {
		if !slices.Contains(keep, filepath.Base(m)) {
			os.Remove(m)
		}
	}
	// A boot's RAM file left by a process that died while it booted
	// (Stop removes it otherwise): an hour is far beyond any boot.
	tmps, _ := filepath.Glob(filepath.Join(dir, slot+".ram.*.tmp"))
	for _, m := range tmps {
		if fi, err := os.Stat(m); err == nil && time.Since(fi.ModTime()) > time.Hour {
			os.Remove(m)
		}
	}
}
