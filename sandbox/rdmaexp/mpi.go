package rdmaexp

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
)

// MPI is lesson 08's MPI experiment: two Open MPI ranks in the guest run a
// small program (compiled there with tcc against Debian's mpi.h) that
// times a ping-pong and an allreduce, three ways — as Debian's Open MPI
// does by default, forced onto TCP (pml ob1, btl tcp), and over UCX on
// rxe (pml ucx, UCX_TLS=rc_v) — and checks which transport each run
// really used: Open MPI's own report of the PML it selected, and UCX's
// report of the lanes its endpoints use.
func MPI() *sandbox.Experiment {
	return &sandbox.Experiment{
		ID:    "mpi-transport",
		Title: say("Open MPI over UCX on rxe vs TCP, and which one really ran", "Open MPI 走 rxe 上的 UCX 对比 TCP，以及实际跑的是哪个"),
		Summary: say("Compiles a small MPI program in the guest, runs two ranks with Debian's defaults, over TCP and over UCX on rxe, times a ping-pong and an allreduce, and reads which transport each run used.",
			"在客户机里编译一个小 MPI 程序，分别以 Debian 的默认配置、走 TCP、走 rxe 上的 UCX 运行两个进程（rank），测量 ping-pong 与 allreduce 的耗时，并读出每次运行实际用的传输。"),
		Needs:   sandbox.NeedRDMA,
		Sharing: sandbox.Timing,
		Params: []sandbox.Param{
			{Name: "iterations", Kind: sandbox.ParamInt, Title: say("Iterations of each operation", "每种操作的次数"), Min: 20, Max: 2000, Default: int64(200)},
		},
		Timeout: 5 * time.Minute,
		Run:     runMPI,
	}
}

// mpiProgram is the program both ranks run: after a warm-up it times n
// ping-pongs of 8 bytes and n allreduces of one double, each iteration on
// its own, and rank 0 prints the medians (an emulated machine's outliers
// would swamp a mean).
const mpiProgram = `#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
	qsort(v, n, sizeof v[0], cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv) {
	int rank, size, i, n = argc > 1 ? atoi(argv[1]) : 200;
	char buf[8] = {0};
	double x, y = 0, t, *d;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2 || n < 1 || n > 100000) {
		if (rank == 0)
			fprintf(stderr, "run with 2 ranks and 1..100000 iterations\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	d = malloc(n * sizeof *d);
	for (i = -10; i < n; i++) { /* the first ten connect and warm up */
		t = MPI_Wtime();
		if (rank == 0) {
			MPI_Send(buf, 8, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
			MPI_Recv(buf, 8, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(buf, 8, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(buf, 8, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
		}
		if (i >= 0)
			d[i] = (MPI_Wtime() - t) / 2;
	}
	if (rank == 0)
		printf("pingpong_us %.3f\n", median(d, n) * 1e6);
	MPI_Barrier(MPI_COMM_WORLD);
	x = rank + 1;
	for (i = 0; i < n; i++) {
		t = MPI_Wtime();
		MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		d[i] = MPI_Wtime() - t;
	}
	if (rank == 0)
		printf("allreduce_us %.3f sum %.0f\n", median(d, n) * 1e6, y);
	free(d);
	MPI_Finalize();
	return 0;
}
`

// mpiProgName is the MPI program's name (and its ranks' comm).
const mpiProgName = "pingreduce"

// mpiInclude is where Debian keeps mpi.h (libopenmpi-dev).
const mpiInclude = "/usr/lib/x86_64-linux-gnu/openmpi/include"

var (
	mpiPingRe   = regexp.MustCompile(`pingpong_us ([\d.]+)`)
	mpiReduceRe = regexp.MustCompile(`allreduce_us ([\d.]+) sum (\d+)`)
	mpiPMLRe    = regexp.MustCompile(`select: component (\w+) selected`)
)

// mpiRun is one mpirun of the program.
type mpiRun struct {
	Label     sandbox.Text
	Args      []string // mpirun options before the program
	MPMD      [2][]string
	PML       string // what Open MPI reported selecting
	Lanes     []string
	PingUs    float64
	ReduceUs  float64
	Sum       int
	UCXOnRxe  bool
	UCXDevice string
}

func (r *mpiRun) run(ctx context.Context, emit sandbox.Emitter, mpirun, prog, dir string, n int) error {
	args := []string{mpirun, "--mca", "plm", "isolated", "--oversubscribe", "--mca", "pml_base_verbose", "10"}
	args = append(args, r.Args...)
	nArg := strconv.Itoa(n)
	if r.MPMD[0] != nil {
		args = append(args, "-np", "1")
		args = append(args, r.MPMD[0]...)
		args = append(args, prog, nArg, ":", "-np", "1")
		args = append(args, r.MPMD[1]...)
		args = append(args, prog, nArg)
	} else {
		args = append(args, "-np", "2", prog, nArg)
	}
	// Open MPI refuses root unless told twice; the agent is root in its own guest.
	t := tool{Args: args, Env: []string{"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"}, Dir: dir}
	toolNote(emit, "", t)
	out, err := runTool(ctx, t, 100*time.Second)
	if err != nil {
		return fmt.Errorf("mpirun: %w: %s", err, complaint(out, 8))
	}
	if m := mpiPMLRe.FindStringSubmatch(out); m != nil {
		r.PML = m[1]
	}
	for _, m := range ucxLanesRe.FindAllStringSubmatch(out, -1) {
		l := strings.TrimSpace(m[1])
		r.Lanes = append(r.Lanes, l)
		if dev := regexp.MustCompile(`rc_verbs/(rxe\d+:\d+)`).FindStringSubmatch(l); dev != nil {
			r.UCXOnRxe, r.UCXDevice = true, dev[1]
		}
	}
	pm, rm := mpiPingRe.FindStringSubmatch(out), mpiReduceRe.FindStringSubmatch(out)
	if pm == nil || rm == nil {
		return fmt.Errorf("the MPI program printed no timings: %s", lastLines(out, 8))
	}
	r.PingUs, _ = strconv.ParseFloat(pm[1], 64)
	r.ReduceUs, _ = strconv.ParseFloat(rm[1], 64)
	r.Sum, _ = strconv.Atoi(rm[2])
	if !finite(r.PingUs, r.ReduceUs) {
		return fmt.Errorf("the MPI program printed a figure that is not finite: %s", lastLines(out, 3))
	}
	return nil
}

func runMPI(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
	n := int(p["iterations"].(int64))
	left := toolsLeft()
	top, err := pickTopology()
	if err != nil {
		return err
	}
	mpirun, err := lookTool("mpirun", "openmpi-bin")
	if err != nil {
		return err
	}
	tcc, err := lookTool("tcc", "tcc")
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(mpiInclude, "mpi.h")); err != nil {
		return fmt.Errorf("mpi.h is missing (%w): the guest image copies it from the host's libopenmpi-dev", err)
	}
	tcgNote(emit)

	phase(emit, "compile", say("Compiling the MPI program with tcc", "用 tcc 编译 MPI 程序"))
	dir, err := os.MkdirTemp("", "mpi-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	src, prog := filepath.Join(dir, mpiProgName+".c"), filepath.Join(dir, mpiProgName)
	if err := os.WriteFile(src, []byte(mpiProgram), 0o644); err != nil {
		return err
	}
	cc := tool{Args: []string{tcc, "-I" + mpiInclude, "-o", prog, src, "-lmpi"}}
	toolNote(emit, "", cc)
	if out, err := runTool(ctx, cc, 60*time.Second); err != nil {
		return fmt.Errorf("tcc: %w: %s", err, lastLines(out, 5))
	}

	srvDev, cliDev := top.Server.Dev+":1", top.Client.Dev+":1"
	// -x is per application context in an MPMD command line: each rank's
	// context carries the whole UCX environment (a setting given only
	// once reaches rank 0 alone, and rank 1 then picks another GID)
	ucxEnv := func(dev string) []string {
		return []string{"-x", "UCX_TLS=rc_v,self", "-x", "UCX_IB_GID_INDEX=0", "-x", "UCX_LOG_LEVEL=info", "-x", "UCX_UD_VERBS_TIMEOUT=6s", "-x", ucxSmallQueues, "-x", "UCX_NET_DEVICES=" + dev}
	}
	runs := []*mpiRun{
		{Label: say("Debian's defaults (mpirun -np 2)", "Debian 默认配置（mpirun -np 2）")},
		{Label: say("TCP (--mca pml ob1 --mca btl tcp,self)", "TCP（“--mca pml ob1 --mca btl tcp,self”）"), Args: []string{"--mca", "pml", "ob1", "--mca", "btl", "tcp,self"}},
		{Label: say("UCX on rxe (--mca pml ucx, UCX_TLS=rc_v,self)", "rxe 上的 UCX（“--mca pml ucx”，UCX_TLS=rc_v,self）"),
			Args: []string{"--mca", "pml", "ucx"},
			MPMD: [2][]string{ucxEnv(srvDev), ucxEnv(cliDev)}},
	}
	phases := []struct {
		id string
		t  sandbox.Text
	}{
		{"default", say("Two ranks as Debian's Open MPI runs them by default", "按 Debian 的 Open MPI 默认配置运行两个进程")},
		{"tcp", say("Two ranks forced onto TCP", "强制两个进程走 TCP")},
		{"ucx", say("Two ranks over UCX on rxe, rank 0 on "+srvDev+", rank 1 on "+cliDev, "两个进程走 rxe 上的 UCX，rank 0 在 "+srvDev+"，rank 1 在 "+cliDev)},
	}
	for i, r := range runs {
		phase(emit, phases[i].id, phases[i].t)
		if err := r.run(ctx, emit, mpirun, prog, dir, n); err != nil {
			return err
		}
	}
	def, tcp, ucx := runs[0], runs[1], runs[2]

	check := sandbox.NewTable(say("Which transport each run used", "每次运行实际用的传输"),
		say("run", "运行"), say("PML Open MPI selected (pml_base_verbose)", "Open MPI 选中的 PML（pml_base_verbose）"), say("UCX endpoint lanes (UCX_LOG_LEVEL=info)", "UCX 端点通道（UCX_LOG_LEVEL=info）"))
	for _, r := range runs {
		lanes := say("none: UCX was not used", "无：没有用到 UCX")
		if len(r.Lanes) > 0 {
			lanes = sandbox.Same(strings.Join(r.Lanes, "; "))
		}
		check.AddRow(r.Label, sandbox.Same(r.PML), lanes)
	}
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: check})

	res := sandbox.NewTable(say("Two MPI ranks, measured here (Soft-RoCE under emulation), medians", "两个 MPI 进程，本机实测（仿真下的 Soft-RoCE），中位数"),
		say("run", "运行"), say("ping-pong 8 B, one way µs", "ping-pong 8 B，单程 µs"), say("allreduce 1 double, µs", "allreduce 1 个 double，µs"))
	for _, r := range runs {
		res.AddRow(r.Label, sandbox.Same(f1(r.PingUs)), sandbox.Same(f1(r.ReduceUs)))
	}
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: res})

	figs := map[string]float64{
		"default_ucx": b2f(def.PML == "ucx"), "ucx_pml": b2f(ucx.PML == "ucx"), "ucx_on_rxe": b2f(ucx.UCXOnRxe),
		"tcp_ping_us": tcp.PingUs, "ucx_ping_us": ucx.PingUs, "default_ping_us": def.PingUs,
		"tcp_reduce_us": tcp.ReduceUs, "ucx_reduce_us": ucx.ReduceUs, "default_reduce_us": def.ReduceUs,
		"left_procs_at_start": float64(left),
	}
	ok := ucx.PML == "ucx" && ucx.UCXOnRxe && ucx.Sum == 3 && tcp.Sum == 3
	result(emit, ok, mpiVerdict(def, tcp, ucx), figs)
	return nil
}

func mpiVerdict(def, tcp, ucx *mpiRun) sandbox.Text {
	var en, zh strings.Builder
	if def.PML != "ucx" {
		fmt.Fprintf(&en, "By default Open MPI selected pml %s, not UCX, and said nothing about it: Debian's /etc/openmpi/openmpi-mca-params.conf turns UCX off (pml = ^ucx). ", def.PML)
		fmt.Fprintf(&zh, "默认情况下 Open MPI 选了“pml %s”而不是 UCX，而且一声不吭：Debian 的 /etc/openmpi/openmpi-mca-params.conf 把 UCX 关掉了（pml = ^ucx）。", def.PML)
	} else {
		fmt.Fprintf(&en, "By default Open MPI selected pml ucx. ")
		fmt.Fprintf(&zh, "默认情况下 Open MPI 选了“pml ucx”。")
	}
	if !ucx.UCXOnRxe {
		fmt.Fprintf(&en, "Asked for UCX, the run selected pml %s but UCX reported no rc_verbs lane on an rxe device: it did not run over RDMA.", ucx.PML)
		fmt.Fprintf(&zh, "要求用 UCX 的那次运行选了“pml %s”，但 UCX 没有报告 rxe 设备上的 rc_verbs 通道：它没有走 RDMA。", ucx.PML)
		return say(en.String(), zh.String())
	}
	fmt.Fprintf(&en, "With --mca pml ucx, UCX reported rc_verbs on %s. The 8 B ping-pong took %s µs one way over UCX on rxe and %s µs over TCP; the allreduce %s µs and %s µs (medians, measured under emulation, both paths in software).",
		ucx.UCXDevice, f1(ucx.PingUs), f1(tcp.PingUs), f1(ucx.ReduceUs), f1(tcp.ReduceUs))
	fmt.Fprintf(&zh, "加上“--mca pml ucx”后，UCX 报告用的是 %s 上的 rc_verbs。8 B 的 ping-pong 走 rxe 上的 UCX 单程 %s µs，走 TCP %s µs；allreduce 分别为 %s µs 和 %s µs（中位数，仿真下实测，两条路径都是软件）。",
		ucx.UCXDevice, f1(ucx.PingUs), f1(tcp.PingUs), f1(ucx.ReduceUs), f1(tcp.ReduceUs))
	return say(en.String(), zh.String())
}
