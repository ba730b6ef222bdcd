package web

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/runs/runner"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/store"
)

// BenchmarkSSEFanout measures one run watched by many event streams: the
// hub stores each event, then fans it out to every subscriber over real
// HTTP. It reports deliveries per second and the delay from emit (before
// the store write, as the runner emits) to receipt by the client, median
// and p99. watchers=1 is the baseline for the ratio. Emitting back to back
// measures capacity (the delay is then mostly queueing); paced=10ms emits
// like a busy live run (tcp-cost sends 12 events/s) and measures latency.
func BenchmarkSSEFanout(b *testing.B) {
	for _, c := range []struct {
		watchers int
		pace     time.Duration
	}{{1, 0}, {200, 0}, {1, 10 * time.Millisecond}, {200, 10 * time.Millisecond}} {
		name := fmt.Sprintf("watchers=%d", c.watchers)
		if c.pace > 0 {
			name += "/paced=" + c.pace.String()
		}
		b.Run(name, func(b *testing.B) { benchFanout(b, c.watchers, c.pace) })
	}
}

func benchFanout(b *testing.B, watchers int, pace time.Duration) {
	env := newBenchRunEnv(b)
	id := "bench-run"
	learner := store.NewLearnerID()
	if err := env.DB.CreateRun(context.Background(), sandbox.RunInfo{ID: id, Learner: learner, Experiment: "ticks", Status: sandbox.StatusRunning}); err != nil {
		b.Fatal(err)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: watchers + 10, MaxConnsPerHost: 0}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	var (
		mu         sync.Mutex
		delays     []time.Duration
		received   atomic.Int64
		reconnects atomic.Int64
		wg         sync.WaitGroup
		firstSeen  = make(chan struct{}, watchers)
		cookie     = &http.Cookie{Name: learnerCookie, Value: learner}
		eventsURL  = env.HTTP.URL + "/api/runs/" + id + "/events"
	)
	watch := func() {
		defer wg.Done()
		var last int64
		var mine []time.Duration
		announced := false
		for {
			req, _ := http.NewRequest("GET", eventsURL, nil)
			req.AddCookie(cookie)
			if last > 0 {
				req.Header.Set("Last-Event-ID", strconv.FormatInt(last, 10))
			}
			res, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			br := bufio.NewReaderSize(res.Body, 64<<10)
			ended := false
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					break
				}
				if strings.HasPrefix(line, ": live") && !announced {
					announced = true
					firstSeen <- struct{}{}
				}
				if strings.HasPrefix(line, "event: end") {
					ended = true
					break
				}
				data, ok := strings.CutPrefix(line, "data: ")
				if !ok {
					continue
				}
				var ev sandbox.Event
				if err := json.Unmarshal([]byte(data), &ev); err != nil {
					b.Error(err)
					break
				}
				mine = append(mine, time.Since(ev.Time))
				received.Add(1)
				last = ev.Seq
			}
			res.Body.Close()
			if ended {
				break
			}
			reconnects.Add(1) // dropped for being slow: resume like EventSource
		}
		mu.Lock()
		delays = append(delays, mine...)
		mu.Unlock()
	}
	wg.Add(watchers)
	for range watchers {
		go watch()
	}
	for range watchers {
		<-firstSeen
	}

	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		if pace > 0 {
			time.Sleep(time.Until(start.Add(time.Duration(i) * pace)))
		}
		env.Hub.RunEvent(id, sandbox.Event{Seq: int64(i + 1), Time: time.Now(), Type: sandbox.EvMetric, Series: "throughput", X: float64(i), Y: 1, Unit: "Gbps"})
	}
	env.Hub.RunEvent(id, sandbox.Event{Seq: int64(b.N + 1), Time: time.Now(), Type: sandbox.EvStatus, Status: sandbox.StatusDone})
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()

	if got, want := received.Load(), int64(watchers*(b.N+1)); got != want {
		b.Fatalf("delivered %d events, want %d", got, want)
	}
	slices.Sort(delays)
	b.ReportMetric(float64(received.Load())/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(float64(b.N+1)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(delays[len(delays)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(delays[len(delays)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(reconnects.Load()), "reconnects")
}

// newBenchRunEnv is newRunEnv for a benchmark: a real store and hub behind
// the real handler, no runner needed.
func newBenchRunEnv(b *testing.B) *runEnv {
	return newRunEnvTB(b, runner.Config{})
}
