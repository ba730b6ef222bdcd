// Package fleet spreads runs over more machines through NATS with
// JetStream. The lab server embeds nats-server (a single machine needs
// nothing extra); a worker (`labserver worker --join nats://HOST:4222`)
// connects with a token or an nkey, takes runs from a work queue, runs each
// on its own backend and streams the events back; the server's runner
// stores every event before fanning it out, as for a local run.
//
// Subjects:
//
//	lab.runs.<need>     JetStream stream LAB_RUNS (work queue): one Job per run
//	lab.claim.<run>     worker → server request: "I start this run" (answered once)
//	lab.ev.<run>        worker → server: the run's events in order, then its end (sandbox.Frame)
//	lab.cmd.<run>       server → the worker that claimed it: an interactive run's commands
//	                    (sandbox.Command), then an empty message: no more will come
//	lab.cancel.<run>    server → workers: stop this run
//	lab.workers.hb      worker → server, every second: who it is, what it runs, its load
//
// A job not yet started by a worker that dies is redelivered to another
// (JetStream's ack wait); a run whose worker stops sending heartbeats ends
// as failed with that reason; a redelivered job whose run was already
// claimed is dropped (the claim is answered once).
package fleet

import (
	"encoding/json"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
)

// Subjects and names.
const (
	stream        = "LAB_RUNS"
	subjRuns      = "lab.runs."
	subjClaim     = "lab.claim."
	subjEvents    = "lab.ev."
	subjCancel    = "lab.cancel."
	subjCommands  = "lab.cmd."
	subjHeartbeat = "lab.workers.hb"
)

// Heartbeat timing: a worker says it is alive every beatEvery; one silent
// for deadAfter is gone, and the run it had is failed.
var (
	beatEvery = time.Second
	deadAfter = 4 * time.Second
	ackWait   = 6 * time.Second // a taken but unstarted job goes back to the queue after this
)

// Job is one run in the work queue.
type Job struct {
	RunID      string `json:"run_id"`
	Experiment string `json:"experiment"`
	// Req is the run's request as the runner encoded it (Session.Request):
	// neither the server nor the worker decodes it, the agent does.
	Req json.RawMessage `json:"req"`
	// Interactive: commands follow on lab.cmd.<run> once the run is claimed.
	Interactive bool         `json:"interactive,omitempty"`
	Need        sandbox.Need `json:"need"`
	Epoch       string       `json:"epoch"` // the server instance that queued it
}

// Claim is a worker's request to start a job's run.
type Claim struct {
	Worker string `json:"worker"`
	Epoch  string `json:"epoch"`
}

// Worker is what a worker says about itself in its heartbeats; /lab lists them.
type Worker struct {
	Name     string           `json:"name"`
	Backends map[string]int   `json:"backends"` // need → slots, e.g. {"host": 2, "rdma": 1}
	Backend  string           `json:"backend"`  // where its RDMA runs go: host|vm|none
	Accel    string           `json:"accel,omitempty"`
	Devices  []sandbox.Device `json:"devices,omitempty"`
	Running  int              `json:"running"`
	Load1    float64          `json:"load1"`
	CPUs     int              `json:"cpus"`
	Seen     time.Time        `json:"seen"`
}
