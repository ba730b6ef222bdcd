package main

import (
	"flag"
	"fmt"
	"strconv"

	"github.com/rdmalab/rdmalab/web"
	"github.com/rdmalab/rdmalab/web/page"
)

// limitsConfig is how serve finds client addresses behind a proxy and how
// much one address may do (docs/operations.md, "Limits").
type limitsConfig struct {
	ProxyHeader  string // LAB_TRUSTED_PROXY_HEADER, e.g. X-Real-IP
	Proxies      string // LAB_TRUSTED_PROXIES, CIDRs; default loopback
	Off          bool   // LAB_ADDR_LIMITS=off: no per-address limits (load tests, one-user labs)
	RunsPerAddr  int    // LAB_RUNS_PER_ADDR
	ConnsPerAddr int    // LAB_CONNS_PER_ADDR
	NewLearners  int    // LAB_NEW_LEARNERS_PER_ADDR: burst of new learners per address
	TermsPerAddr int    // LAB_TERMINALS_PER_ADDR: learners of one address holding a terminal
}

func limitFlags(fset *flag.FlagSet, c *limitsConfig, env func(key, def string) string) {
	atoi := func(key string) int {
		n, _ := strconv.Atoi(env(key, "0"))
		return n
	}
	fset.StringVar(&c.ProxyHeader, "trusted-proxy-header", env("LAB_TRUSTED_PROXY_HEADER", ""),
		"header carrying the client address from a trusted reverse proxy (e.g. X-Real-IP) [LAB_TRUSTED_PROXY_HEADER]")
	fset.StringVar(&c.Proxies, "trusted-proxies", env("LAB_TRUSTED_PROXIES", ""),
		"comma-separated proxy addresses/CIDRs whose header is believed (default loopback) [LAB_TRUSTED_PROXIES]")
	fset.BoolVar(&c.Off, "no-addr-limits", env("LAB_ADDR_LIMITS", "") == "off",
		"turn off the per-address limits (load tests, single-user labs) [LAB_ADDR_LIMITS=off]")
	fset.IntVar(&c.RunsPerAddr, "runs-per-addr", atoi("LAB_RUNS_PER_ADDR"),
		"queued or running runs one client address may hold (0: default, 4; raise it for a class behind one NAT address) [LAB_RUNS_PER_ADDR]")
	fset.IntVar(&c.ConnsPerAddr, "conns-per-addr", atoi("LAB_CONNS_PER_ADDR"),
		"open connections one client address may hold (0: default, 256) [LAB_CONNS_PER_ADDR]")
	fset.IntVar(&c.NewLearners, "new-learners-per-addr", atoi("LAB_NEW_LEARNERS_PER_ADDR"),
		"new learners one client address may create at once (0: default, 60) [LAB_NEW_LEARNERS_PER_ADDR]")
	fset.IntVar(&c.TermsPerAddr, "terminals-per-addr", atoi("LAB_TERMINALS_PER_ADDR"),
		"learners of one client address who may hold a terminal, in use or waiting (0: half of the terminals, at least one) [LAB_TERMINALS_PER_ADDR]")
}

// webLimits turns the flags into the web server's settings.
func (c limitsConfig) webLimits() (page.ClientAddrConfig, web.Limits, error) {
	ca := page.ClientAddrConfig{Header: c.ProxyHeader}
	if c.Proxies != "" {
		p, err := page.ParseProxies(c.Proxies)
		if err != nil {
			return ca, web.Limits{}, fmt.Errorf("%w: --trusted-proxies: %w", errUsage, err)
		}
		ca.Proxies = p
	}
	l := web.Limits{RunsPerAddr: c.RunsPerAddr, ConnsPerAddr: c.ConnsPerAddr, NewLearnerBurst: c.NewLearners, TerminalsPerAddr: c.TermsPerAddr}
	if c.Off {
		l = web.Limits{RunsPerAddr: -1, AddrRunBurst: -1, WriteBurst: -1, NewLearnerBurst: -1, ConnsPerAddr: -1, TerminalsPerAddr: -1,
			BodyTimeout: web.DefaultLimits.BodyTimeout}
	}
	return ca, l, nil
}
