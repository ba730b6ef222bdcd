package sandbox

import "encoding/json"

// MarshalJSON writes a metric's x and y even when they are 0: a flat line at
// zero (the receiver's CPU during RDMA WRITEs) is the measurement a chart
// exists to show, and `omitempty` would drop every such point. Other event
// types keep their compact form.
func (ev Event) MarshalJSON() ([]byte, error) {
	type plain Event // no methods: no recursion
	if ev.Type != EvMetric {
		return json.Marshal(plain(ev))
	}
	return json.Marshal(struct {
		plain
		X float64 `json:"x"`
		Y float64 `json:"y"`
	}{plain(ev), ev.X, ev.Y})
}
