package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Sample is one value a read function returns at a scrape: its label
// values, in the order the metric names its labels, and the value.
type Sample struct {
	Labels []string
	Value  float64
}

// One is a single unlabelled sample.
func One(v float64) []Sample { return []Sample{{Value: v}} }

// funcCollector asks read for its samples at every scrape, so a state
// that its subsystem already counts (terminals in use, workers, the LTI
// outbox) is never copied into a second counter that could drift from it.
type funcCollector struct {
	desc *prometheus.Desc
	kind prometheus.ValueType
	read func() []Sample
}

func (c *funcCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *funcCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.read() {
		m, err := prometheus.NewConstMetric(c.desc, c.kind, s.Value, s.Labels...)
		if err != nil {
			m = prometheus.NewInvalidMetric(c.desc, err)
		}
		ch <- m
	}
}

// Gauge adds a gauge named name whose samples read returns at each
// scrape. read runs on the scraping request's goroutine: it must be
// quick and safe to call concurrently with the lab.
func (l *Lab) Gauge(name, help string, labels []string, read func() []Sample) {
	l.reg.MustRegister(&funcCollector{desc: prometheus.NewDesc(name, help, labels, nil), kind: prometheus.GaugeValue, read: read})
}

// Counter adds a counter read at each scrape from a count its subsystem
// keeps (it only grows while the process lives).
func (l *Lab) Counter(name, help string, labels []string, read func() []Sample) {
	l.reg.MustRegister(&funcCollector{desc: prometheus.NewDesc(name, help, labels, nil), kind: prometheus.CounterValue, read: read})
}
