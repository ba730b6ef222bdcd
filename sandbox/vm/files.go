package vm

import (
	"fmt"
	"io"
	"os"
)

// copyFile copies src to dst (the console log kept after a failed boot).
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return out.Close()
}

// writeFileAtomic replaces name with b (the accelerator record).
func writeFileAtomic(name string, b []byte) error {
	if err := os.WriteFile(name+".tmp", b, 0o644); err != nil {
		return err
	}
	return os.Rename(name+".tmp", name)
}
