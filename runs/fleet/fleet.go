// Package fleet spreads runs over more machines through NATS with
// JetStream. The lab server embeds nats-server (a single machine needs
// nothing extra); a worker (`labserver worker --join nats://HOST:4222`)
// connects with its own nkey (or a shared token), takes runs from a work
// queue, runs each on its own backend and streams the events back; the
// server's runner stores every event before fanning it out, as for a local
// run. A worker is trusted with nothing but the runs the server granted it
// (auth.go: subject permissions per worker; bounds.go: what the server
// accepts from one).
//
// Subjects (<w> is the worker's name, which its credential allows):
//
//	lab.runs.<need>       JetStream stream LAB_RUNS (work queue): one Job per run,
//	                      taken through the consumer work-<need> the server creates
//	lab.claim.<w>.<run>   worker → server request: "I start this run" (granted once)
//	lab.ev.<w>.<run>      worker → server: the run's events in order, then its end
//	                      (frame: a sandbox.Frame numbered from 1); counted only from
//	                      the worker whose claim was granted
//	lab.cmd.<w>.<run>     server → that worker: an interactive run's commands
//	                      (sandbox.Command), then an empty message: no more will come
//	lab.cancel.<w>.<run>  server → that worker: stop this run
//	lab.hb.<w>            worker → server, every second: what it runs, its load
//
// A job not yet started by a worker that dies is redelivered to another
// (JetStream's ack wait); a run whose worker stops sending heartbeats ends
// as failed with that reason; a redelivered job whose run was already
// claimed is dropped (the claim is answered once).
package fleet

import (
	"encoding/json"
	"time"

	"github.com/rdmalab/rdmalab"
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
	subjHeartbeat = "lab.hb."
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
	// Interactive: commands follow on lab.cmd.<w>.<run> once the run is claimed.
	Interactive bool         `json:"interactive,omitempty"`
	Need        sandbox.Need `json:"need"`
	Epoch       string       `json:"epoch"` // the server instance that queued it
}

// Claim is a worker's request to start a job's run (the worker is the
// one its subject names).
type Claim struct {
	Epoch string `json:"epoch"`
}

// frame is one message on lab.ev.<w>.<run>: an event or the end, numbered
// from 1 so that the server sees a message it dropped (a slow consumer)
// and fails the run instead of storing it with a hole.
type frame struct {
	N int64 `json:"n"`
	sandbox.Frame
}

// consumerName is the durable work consumer of need's jobs.
func consumerName(need sandbox.Need) string { return "work-" + string(need) }

// Worker is what a worker says about itself in its heartbeats; /lab lists them.
type Worker struct {
	Name     string            `json:"name"`
	Backends map[string]int    `json:"backends"` // need → slots, e.g. {"host": 2, "rdma": 1}
	Backend  string            `json:"backend"`  // where its RDMA runs go: host|vm|none
	Accel    string            `json:"accel,omitempty"`
	Devices  []sandbox.Device  `json:"devices,omitempty"`
	Running  int               `json:"running"`
	Load1    float64           `json:"load1"`
	CPUs     int               `json:"cpus"`
	Terms    *rdmalab.TermLoad `json:"terms,omitempty"` // learner terminals it hosts (term.go)
	Seen     time.Time         `json:"seen"`
}
