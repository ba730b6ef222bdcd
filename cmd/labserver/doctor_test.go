package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/store"
)

// TestDoctorNamesBrokenThings breaks three things on purpose — the guest
// image missing, the database's folder read-only, the LTI key readable by
// everyone — and sees `labserver doctor` name each with its fix, in
// English and in Chinese by the locale, and exit 1 (the last two block
// serving).
func TestDoctorNamesBrokenThings(t *testing.T) {
	dir := t.TempDir()
	dbDir := filepath.Join(dir, "data")
	os.Mkdir(dbDir, 0o750)
	dbPath := filepath.Join(dbDir, "rdmalab.db")
	db, err := store.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	key := filepath.Join(dbDir, ltiKeyName)
	if err := os.WriteFile(key, []byte("-----BEGIN PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chmod(key, 0o644) // world-readable, as a careless copy leaves it
	os.Chmod(dbDir, 0o555)
	t.Cleanup(func() { os.Chmod(dbDir, 0o750) })
	vmDir := filepath.Join(dir, "vm") // no image built there
	t.Setenv("LAB_VM_DIR", vmDir)

	run := func(lang string) (int, string) {
		m, _ := newMain(map[string]string{"LAB_ADDR": "127.0.0.1:0", "LAB_DB": dbPath, "LAB_BACKEND": "vm", "LAB_TERMINALS": "2"})
		if err := m.ParseFlags(nil); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		code := doctor(context.Background(), m.Config, func(k string) string {
			if k == "LANG" {
				return lang
			}
			return ""
		}, &out)
		return code, out.String()
	}
	code, out := run("en_US.UTF-8")
	if code != 1 {
		t.Errorf("exit %d, want 1 (a read-only database folder and an exposed key block serving)", code)
	}
	for _, want := range []string{
		"FAIL  database folder: " + dbDir + " is read-only",
		"fix: give the service user write access: `chown rdmalab:rdmalab " + dbDir,
		"FAIL  lti key: " + key + " is readable by others (mode 0644)",
		"fix: `chmod 0600 " + key + "`",
		"WARN  guest image: no guest image in " + vmDir,
		"fix: build it now: `labserver vm build`",
		"2 problem(s) block labserver serve",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor does not say %q:\n%s", want, out)
		}
	}

	code, out = run("zh_CN.UTF-8")
	if code != 1 {
		t.Errorf("zh: exit %d, want 1", code)
	}
	for _, want := range []string{
		"错误  数据库目录：" + dbDir + " 是只读的",
		"解决：让服务用户可以写入",
		"错误  LTI 密钥：" + key + " 其他用户也能读取（权限 0644）",
		"解决：`chmod 0600 " + key + "`",
		"警告  虚拟机镜像：" + vmDir + " 里没有虚拟机镜像",
		"解决：现在就构建：`labserver vm build`",
		"2 个问题会阻止 labserver serve 运行",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor (zh) does not say %q:\n%s", want, out)
		}
	}

	// Fixed, the two blockers are gone and doctor exits 0.
	os.Chmod(dbDir, 0o750)
	os.Chmod(key, 0o600)
	if code, out := run(""); code != 0 || strings.Contains(out, "FAIL") {
		t.Errorf("after the fixes: exit %d\n%s", code, out)
	}
}

// TestDoctorBusyAddress: a port another process holds blocks serving,
// and doctor says how to find who.
func TestDoctorBusyAddress(t *testing.T) {
	f := checkListen("127.0.0.1:0")
	if f[0].Level != levelOK {
		t.Fatalf("a free port: %+v", f[0])
	}
	m, _ := newMain(map[string]string{"LAB_ADDR": "127.0.0.1:0", "LAB_DB": filepath.Join(t.TempDir(), "x.db"), "LAB_BACKEND": "none", "LAB_TERMINALS": "0"})
	m.ParseFlags(nil)
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	f = checkListen(m.Addr())
	if f[0].Level != levelFail || !strings.Contains(f[0].FixEn, "ss -ltnp") || !strings.Contains(f[0].FixZh, "ss -ltnp") {
		t.Errorf("a busy port: %+v", f[0])
	}
}

// TestDoctorAccelCauseInChinese: the causes the vm package records in
// English (accel.json, /dev/kvm's error) reach a zh reader in Chinese.
func TestDoctorAccelCauseInChinese(t *testing.T) {
	for _, why := range []string{
		"KVM boot failed: the guest made no progress: its console stayed empty within 2s of QEMU's start (a working KVM gets there in well under a second)",
		"no usable /dev/kvm: open /dev/kvm: permission denied",
	} {
		zh := accelWhyZh(why)
		if strings.Contains(zh, "KVM boot failed") || strings.Contains(zh, "no usable") {
			t.Errorf("%q in Chinese: %q", why, zh)
		}
	}
}
