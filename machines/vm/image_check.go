package vm

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/rdmalab/rdmalab/machines/vmimage"
)

// checkedImages remembers, per image directory and agent binary, the hash
// of the image this process has checked or built. A guest start after the
// first only reads the manifest: vmimage.Build plans the image anew every
// time (ldd over every program, a hash of every file) under the image
// directory's lock, 1–2 s on a loaded host, and 20 learners opening their
// terminals at once stood in line for it one after another (issue 31:
// 17.6–21.2 s to a prompt behind the spare; here at load 20, 21 s apart).
// An image rebuilt meanwhile (another hash in its manifest) is checked
// again.
var checkedImages sync.Map // Dir + "\x00" + Agent → image hash

// ensureImage is vmimage.Build, once per process for an unchanged image.
func ensureImage(ctx context.Context, cfg Config) (*vmimage.Image, error) {
	key := cfg.Dir + "\x00" + cfg.Agent
	if h, ok := checkedImages.Load(key); ok {
		if im, err := vmimage.LoadImage(cfg.Dir); err == nil && im.Hash == h.(string) {
			return im, nil
		}
	}
	im, _, err := vmimage.Build(ctx, vmimage.BuildOptions{Dir: cfg.Dir, Agent: cfg.Agent, Progress: cfg.Progress})
	if err != nil {
		return nil, fmt.Errorf("guest image: %w", err)
	}
	checkedImages.Store(key, im.Hash)
	return im, nil
}

// qemuVersions caches qemuVersion per binary as it is on disk (path, size,
// time): every guest start asks twice (the snapshot key, the KVM verdict's
// key), and each ask was a QEMU process.
var qemuVersions sync.Map // "path size mtime" → version line

// qemuVersionCached is qemuVersion, asked once per binary.
func qemuVersionCached(qemu string) string {
	fi, err := os.Stat(qemu)
	if err != nil {
		return qemuVersion(qemu)
	}
	key := fmt.Sprintf("%s %d %d", qemu, fi.Size(), fi.ModTime().UnixNano())
	if v, ok := qemuVersions.Load(key); ok {
		return v.(string)
	}
	v := qemuVersion(qemu)
	if v != "" {
		qemuVersions.Store(key, v)
	}
	return v
}
