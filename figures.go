package rdmalab

// The tcp-cost experiment hands three figures of its result to lesson 01's
// CPU budget calculator (web prefills the calculator from the learner's
// latest run). The names are declared here, between the two, so the web
// reads a run's figures without importing the experiment that wrote them.
const (
	TCPCostID         = "tcp-cost"     // the experiment's id
	TCPCostGHzPerGbps = "ghz_per_gbps" // figure: measured CPU cost, GHz per Gbps
	TCPCostCPUGHz     = "cpu_ghz"      // figure: the measuring core's clock
	TCPCostMsgSize    = "msg_size"     // figure: bytes per write
)

// RuleGHzPerGbps is lesson 01's rule of thumb: kernel TCP costs about 1 GHz
// of CPU per Gbps. The calculator starts from it and the experiment's
// verdict compares the measured cost with it.
const RuleGHzPerGbps = 1.0
