package rdmaexp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/creack/pty"
)

// perftest's curve for lesson 06's size sweep. `ib_write_bw -a` runs every
// power of two from 2 B to 8 MiB (perftest has no option to bound it) and
// calibrates its cycle clock again for every row (~0.2 s each). Under TCG
// the whole -a run took 10–11 s with -n 5 on a quiet machine, and 22 s on a
// loaded one — too long for a 15 s run. So the client's output goes to a
// pseudo-terminal (perftest's stdout is line-buffered there, as in a
// shell), each row is read as it is printed, and both ends are stopped
// once the row of the largest size we asked for has arrived. The rows we
// keep are perftest's own, untouched.

// ptRow is one row of ib_write_bw's table.
type ptRow struct {
	Size  int
	Iters int
	MBps  float64 // BW average[MB/sec]
}

// parsePerftestRow reads "#bytes #iterations BW-peak BW-average MsgRate";
// ok is false for any other line. perftest's complaints on stderr may be
// glued to a row (the terminal shows both streams), so only the first four
// fields count.
func parsePerftestRow(line string) (ptRow, bool) {
	f := strings.Fields(strings.TrimRight(line, "\r"))
	if len(f) < 4 {
		return ptRow{}, false
	}
	size, err1 := strconv.Atoi(f[0])
	iters, err2 := strconv.Atoi(f[1])
	avg, err3 := strconv.ParseFloat(f[3], 64)
	if err1 != nil || err2 != nil || err3 != nil || size <= 0 || iters <= 0 {
		return ptRow{}, false
	}
	if !finite(avg) { // a failed clock calibration, like 0.00: no figure
		avg = 0
	}
	return ptRow{Size: size, Iters: iters, MBps: avg}, true
}

// curveIters is -n for an -a run stopped at maxSize: about 8 MiB moved in
// all (each size moves n×size, the sizes up to max sum to 2×max), at least
// perftest's minimum of 5 and at most 50. The time per row is mostly
// perftest's clock calibration (~0.2 s), not the WRITEs.
func curveIters(maxSize int) int {
	n := (8 << 20) / (2 * maxSize)
	return min(max(n, 5), 50)
}

// perftestRows runs the server, then the client with its output on a
// terminal, calls row for each result row as it is printed and stops both
// ends after the row at maxSize (or the last size below it). It returns
// the rows and the client's whole output.
func perftestRows(ctx context.Context, bin string, srvArgs, cliArgs []string, maxSize int, row func(ptRow)) ([]ptRow, string, error) {
	var out strings.Builder
	for try := 0; ; try++ {
		rows, o, err := perftestRowsOnce(ctx, bin, srvArgs, cliArgs, maxSize, row)
		out.WriteString(o)
		if err == nil || len(rows) > 0 || try == 2 || ctx.Err() != nil || !strings.Contains(o, "Couldn't connect") {
			return rows, out.String(), err
		}
	}
}

func perftestRowsOnce(ctx context.Context, bin string, srvArgs, cliArgs []string, maxSize int, row func(ptRow)) ([]ptRow, string, error) {
	port := strconv.Itoa(18515 + int(time.Now().UnixNano()%2000))
	srvArgs = append(append([]string{}, srvArgs...), "-p", port)
	cliArgs = append([]string{"-p", port}, cliArgs...)
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	srv := exec.CommandContext(cctx, bin, srvArgs...)
	var srvOut strings.Builder
	srv.Stdout, srv.Stderr = &srvOut, &srvOut
	if err := srv.Start(); err != nil {
		return nil, "", fmt.Errorf("start the server: %w", err)
	}
	defer func() { cancel(); _ = srv.Wait() }()
	master, slave, err := pty.Open() // master: ours; slave: the child's stdio
	if err != nil {
		return nil, "", fmt.Errorf("a terminal for ib_write_bw: %w", err)
	}
	defer master.Close()
	time.Sleep(300 * time.Millisecond) // the server needs a moment to listen
	cli := exec.CommandContext(cctx, bin, cliArgs...)
	cli.Stdout, cli.Stderr = slave, slave
	if err := cli.Start(); err != nil {
		slave.Close()
		return nil, "", fmt.Errorf("start the client: %w", err)
	}
	slave.Close() // the client holds it; reading master ends (EIO) when the client is gone
	var rows []ptRow
	var out strings.Builder
	done := false
	sc := bufio.NewScanner(master)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		out.WriteString(line + "\n")
		r, ok := parsePerftestRow(line)
		if !ok || r.Size > maxSize {
			continue
		}
		rows = append(rows, r)
		row(r)
		if 2*r.Size > maxSize { // the next row would be beyond what we asked for
			done = true
			break
		}
	}
	if done {
		_ = cli.Process.Kill()
		_ = cli.Wait()
		return rows, out.String(), nil
	}
	err = cli.Wait()
	if err == nil && len(rows) == 0 {
		err = errors.New("no result rows")
	}
	if err != nil {
		return rows, out.String(), fmt.Errorf("client: %w: %s | server: %s", err, tail(out.String()), tail(srvOut.String()))
	}
	return rows, out.String(), nil
}
