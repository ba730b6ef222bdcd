package vmimage

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// The guest carries a C compiler so a learner's own verbs program (a
// lesson's :::program) compiles and runs in their own guest. It is tcc
// (Debian's tcc 0.9.27): one 250 KB binary that compiles and links a verbs
// program against libibverbs and librdmacm in well under a second even
// under TCG, where gcc's cc1 + as + collect2 + ld take seconds and some
// 100 MB more of image. tcc parses verbs.h's static inline calls
// (ibv_post_send, ibv_poll_cq through the context's ops) and rdma_cma.h;
// its diagnostics are "file:line: error: …" (no column).
//
// The image gets only the headers the guest's programs can include: the
// closure of CompilerHeaders as the host's tcc preprocessor resolves it
// (tcc -E names every file it read), not all of /usr/include (130 MB on a
// developer machine).

// CompilerHeaders are the headers a learner's program may include (and
// whatever they include in turn).
var CompilerHeaders = []string{
	"stdio.h", "stdlib.h", "stdint.h", "inttypes.h", "stdbool.h", "stddef.h", "stdarg.h",
	"string.h", "strings.h", "errno.h", "unistd.h", "fcntl.h", "getopt.h", "signal.h",
	"time.h", "limits.h", "ctype.h", "assert.h", "poll.h", "pthread.h", "netdb.h",
	"endian.h", "byteswap.h", "math.h", "arpa/inet.h", "netinet/in.h", "sys/socket.h",
	"sys/types.h", "sys/stat.h", "sys/mman.h", "sys/resource.h", "sys/time.h",
	"sys/wait.h", "sys/epoll.h", "sys/ioctl.h", "sys/uio.h",
	"infiniband/verbs.h", "infiniband/sa.h", "rdma/rdma_cma.h", "rdma/rdma_verbs.h",
}

// CompilerPath is the compiler inside the guest.
const CompilerPath = "/usr/bin/tcc"

const (
	tccLibDir  = "/usr/lib/x86_64-linux-gnu/tcc"
	hostLibDir = "/usr/lib/x86_64-linux-gnu"
)

// compilerLinkFiles are what tcc reads to link a program: the C runtime's
// start files, libc's linker script and its static part, and the
// development names of the two RDMA libraries (the .so.1 files themselves
// come with the programs that use them).
var compilerLinkFiles = []string{
	hostLibDir + "/crt1.o", hostLibDir + "/crti.o", hostLibDir + "/crtn.o",
	hostLibDir + "/libc.so", hostLibDir + "/libc_nonshared.a",
	tccLibDir + "/libtcc1.a",
}

// compilerDevLinks are the -l names: libX.so → its soname.
var compilerDevLinks = map[string]string{
	"libibverbs.so": "libibverbs.so.1",
	"librdmacm.so":  "librdmacm.so.1",
	"libm.so":       "libm.so.6",
}

// addCompiler puts tcc, its runtime, the link files and the header
// closure into the image; a MissingError names the packages when the host
// lacks them.
func (p *plan) addCompiler(ctx context.Context) error {
	tcc, err := lookProgram("tcc")
	if err != nil {
		return &MissingError{What: "the C compiler tcc (a lesson compiles the learner's verbs program in the guest)", Packages: []string{"tcc"}}
	}
	for _, h := range []string{"/usr/include/infiniband/verbs.h", "/usr/include/rdma/rdma_cma.h", "/usr/include/stdio.h"} {
		if _, err := os.Stat(h); err != nil {
			return &MissingError{What: "the headers " + h, Packages: []string{"libibverbs-dev", "librdmacm-dev", "libc6-dev"}}
		}
	}
	if err := p.addBinary(ctx, tcc, "usr/bin/tcc"); err != nil {
		return err
	}
	headers, err := headerClosure(ctx, tcc)
	if err != nil {
		return err
	}
	incs, _ := filepath.Glob(tccLibDir + "/include/*.h")
	for _, f := range append(append(headers, incs...), compilerLinkFiles...) {
		if _, err := os.Stat(f); err != nil {
			return &MissingError{What: f, Packages: []string{"libc6-dev", "tcc"}}
		}
		p.files.file(cleanRel(f), f, 0o644)
		p.inputs = append(p.inputs, f)
	}
	for dev, so := range compilerDevLinks {
		p.files.symlink("usr/lib/x86_64-linux-gnu/"+dev, so)
		if !p.files.has("usr/lib/x86_64-linux-gnu/" + so) {
			host := hostLibDir + "/" + so
			if _, err := os.Stat(host); err != nil {
				host = "/lib/x86_64-linux-gnu/" + so
			}
			if err := p.addBinary(ctx, host, "usr/lib/x86_64-linux-gnu/"+so); err != nil {
				return err
			}
		}
	}
	// libc.so.6 and librdmacm name ld-linux-x86-64.so.2 as needed; tcc
	// looks for it in its library directories, not in /lib64.
	if ld := "usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"; !p.files.has(ld) {
		p.files.symlink(ld, "../../lib64/ld-linux-x86-64.so.2")
	}
	return nil
}

// headerClosure lists every header file the host's tcc reads to
// preprocess a file including CompilerHeaders.
func headerClosure(ctx context.Context, tcc string) ([]string, error) {
	var src bytes.Buffer
	for _, h := range CompilerHeaders {
		fmt.Fprintf(&src, "#include <%s>\n", h)
	}
	cmd := exec.CommandContext(ctx, tcc, "-E", "-")
	cmd.Stdin = &src
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("tcc -E of the guest's headers: %w: %s", err, strings.TrimSpace(errb.String()))
	}
	seen := map[string]bool{}
	var files []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// Line markers: # 12 "/usr/include/stdio.h"
		f := strings.Fields(sc.Text())
		if len(f) < 3 || f[0] != "#" {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		name, err := strconv.Unquote(f[2])
		if err != nil || !strings.HasPrefix(name, "/usr/") || seen[name] {
			continue
		}
		seen[name] = true
		files = append(files, filepath.Clean(name))
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(files) < len(CompilerHeaders) {
		return nil, fmt.Errorf("tcc -E of the guest's headers read only %d files", len(files))
	}
	return files, nil
}
