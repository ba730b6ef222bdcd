package deploy

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"github.com/goccy/go-yaml"
)

// TestK8sScrapeAnnotations: the pod says where Prometheus scrapes it (the
// container's port, /metrics) and takes the metrics token from a Secret,
// since a scrape from another pod is not a loopback client.
func TestK8sScrapeAnnotations(t *testing.T) {
	b, err := os.ReadFile("k8s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var dep map[string]any
	for _, part := range bytes.Split(b, []byte("\n---\n")) {
		var m map[string]any
		if err := yaml.Unmarshal(part, &m); err != nil {
			t.Fatal(err)
		}
		if m["kind"] == "Deployment" {
			dep = m
		}
	}
	get := func(v any, path ...string) any {
		for _, p := range path {
			m, _ := v.(map[string]any)
			v = m[p]
		}
		return v
	}
	tmpl := get(dep, "spec", "template")
	ann, _ := get(tmpl, "metadata", "annotations").(map[string]any)
	c := get(tmpl, "spec", "containers").([]any)[0]
	port := ""
	for _, p := range get(c, "ports").([]any) {
		if get(p, "name") == "http" {
			port = fmt.Sprint(get(p, "containerPort"))
		}
	}
	if ann["prometheus.io/scrape"] != "true" || ann["prometheus.io/path"] != "/metrics" || port == "" || ann["prometheus.io/port"] != port {
		t.Errorf("pod annotations %v: want prometheus.io/scrape \"true\", path /metrics, port %q (the http port)", ann, port)
	}
	token := false
	for _, e := range get(c, "env").([]any) {
		token = token || get(e, "name") == "LAB_METRICS_TOKEN" && get(e, "valueFrom", "secretKeyRef", "name") != nil
	}
	if !token {
		t.Errorf("the container does not take LAB_METRICS_TOKEN from a Secret")
	}
}
