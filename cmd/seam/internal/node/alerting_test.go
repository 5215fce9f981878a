package node_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/seamdata/seam/cmd/seam/internal/deploycheck"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
)

// needTool returns the path of a program of Debian's prometheus package.
// CI installs it (.ci/run), so there a missing one fails the test;
// elsewhere the test skips saying what to install.
func needTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not installed, and CI must test the alert rules with it: apt-get install -y prometheus", name)
	}
	t.Skipf("%s is not installed (apt-get install -y prometheus); the alert rules are not tested against it", name)
	return ""
}

var prometheusDir = filepath.Join(observabilityDir, "prometheus")

// The rules' unit tests (rules_test.yml): a first BLOCKED partition, a
// first-time quarantine reason, a restart and a 30-day outage each alert
// as an on-call engineer needs.
func TestRulesPromtool(t *testing.T) {
	t.Parallel()
	promtool := needTool(t, "promtool")
	for _, args := range [][]string{{"check", "rules", "rules.yml"}, {"test", "rules", "rules_test.yml", "rules_outage_test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = prometheusDir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// runbookCommand finds the commands of a runbook annotation.
var runbookCommand = regexp.MustCompile("`([^`]*)`")

// Every command a runbook annotation gives, in backticks, runs against a
// real seam with the alert's labels filled in: none is a usage error
// (exit 2), the exit of an unknown command or a missing argument.
func TestRunbookCommandsRun(t *testing.T) {
	t.Parallel()
	n := seamtest.StartOrders(t)
	good := seamtest.WriteLines(t, "good.ndjson", seamtest.OrderLines(30))
	n.MustCLI(t, exit.OK, "gate", "ingest", "shop.orders", good, "--partition", "2026-03-01")

	groups, errs := rulefmt.ParseFile(filepath.Join(prometheusDir, "rules.yml"), false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	labelSets := []map[string]string{
		{"subject": "shop.orders", "partition": "2026-03-01", "field": "customer_id", "rpc_method": "seam.gate.v1.GateService/Ingest"},
		{"subject": "shop.orders", "field": "customer_id"}, // an alert from a counter, without a partition
	}
	ran := 0
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			for _, labels := range labelSets {
				var text strings.Builder
				tmpl, err := template.New(r.Alert).Option("missingkey=zero").Parse("{{$labels := .Labels}}{{$value := .Value}}" + r.Annotations["runbook"])
				if err != nil {
					t.Errorf("alert %s: runbook does not parse: %v", r.Alert, err)
					continue
				}
				if err := tmpl.Execute(&text, map[string]any{"Labels": labels, "Value": 0.5}); err != nil {
					t.Errorf("alert %s: runbook: %v", r.Alert, err)
					continue
				}
				cmds := runbookCommand.FindAllStringSubmatch(text.String(), -1)
				if g.Name == "seam-data" && len(cmds) == 0 {
					t.Errorf("alert %s: the runbook %q gives no command in backticks", r.Alert, text.String())
				}
				for _, m := range cmds {
					args := deploycheck.ShellWords(m[1])
					if len(args) == 0 || args[0] != "seam" {
						t.Errorf("alert %s: runbook command %q is not a seam command; write other tools without backticks", r.Alert, m[1])
						continue
					}
					ran++
					out, errOut, code := n.CLI(t, args[1:]...)
					if code == exit.Usage {
						t.Errorf("alert %s: runbook command `%s` is a usage error (exit 2):\n%s%s", r.Alert, m[1], out, errOut)
					}
				}
			}
		}
	}
	if ran < 10 {
		t.Errorf("ran %d runbook commands, want those of every data alert", ran)
	}
}

// freeAddr returns a loopback address no one listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// promQuery runs an instant query and returns its vector's samples.
func promQuery(t *testing.T, addr, query string) ([]map[string]any, error) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(query))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Data   struct {
			Result []map[string]any `json:"result"`
		} `json:"data"`
		Error string `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("query %s: %s", query, body.Error)
	}
	return body.Data.Result, nil
}

// A real Prometheus scraping a real seam up every second, with the
// shipped rules, raises SeamPartitionBlocked within 15 s of the subject's
// first BLOCKED seal; before it the BLOCKED counter already reads 0. The
// store's transaction metrics are on the same /metrics.
//
// Not parallel: the stores measure on the process's meter provider, which
// each node sets, so this node runs alone.
func TestPrometheusAlertsOnFirstBlock(t *testing.T) {
	prometheus := needTool(t, "prometheus")
	n := seamtest.StartOrders(t)
	good := seamtest.WriteLines(t, "good.ndjson", seamtest.OrderLines(30))
	n.MustCLI(t, exit.OK, "gate", "ingest", "shop.orders", good, "--partition", "2026-03-01")

	code, body := n.REST(t, "GET", "/metrics", "", "")
	if text, _ := body["text"].(string); code != 200 || !strings.Contains(text, "seam_store_transaction_duration_seconds_bucket") {
		t.Errorf("/metrics (%d) has no seam_store_transaction_duration_seconds: the store's metrics are not exported", code)
	}

	rules, err := filepath.Abs(filepath.Join(prometheusDir, "rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
  - job_name: seam
    static_configs:
      - targets: [%q]
`, rules, n.HTTPAddr)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	var logs strings.Builder
	cmd := exec.Command(prometheus, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start prometheus: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("prometheus log:\n%s", logs.String())
		}
	})

	// The BLOCKED counter reads 0 before the first block: the block is
	// an increase, not the birth of a series.
	deadline := time.Now().Add(60 * time.Second)
	for {
		res, err := promQuery(t, addr, `seam_gate_partitions_total{subject="shop.orders",verdict="BLOCKED"}`)
		if err == nil && len(res) == 1 {
			if v := res[0]["value"].([]any)[1]; v != "0" {
				t.Fatalf("the BLOCKED counter reads %v before any block, want 0", v)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus has no BLOCKED counter of shop.orders after 60 s (%v, %v)", res, err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	lines := seamtest.OrderLines(30)
	lines[4] = strings.Replace(lines[4], `"customer_id":100004,`, ``, 1)
	bad := seamtest.WriteLines(t, "bad.ndjson", lines)
	n.MustCLI(t, exit.Failed, "gate", "ingest", "shop.orders", bad, "--partition", "2026-03-02")
	blocked := time.Now()

	for {
		resp, err := http.Get("http://" + addr + "/api/v1/alerts")
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Data struct {
				Alerts []struct {
					Labels map[string]string `json:"labels"`
					State  string            `json:"state"`
				} `json:"alerts"`
			} `json:"data"`
		}
		err = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range got.Data.Alerts {
			l := a.Labels
			if l["alertname"] == "SeamPartitionBlocked" && l["subject"] == "shop.orders" && (a.State == "pending" || a.State == "firing") {
				if l["partition"] != "2026-03-02" {
					t.Errorf("SeamPartitionBlocked names partition %q, want 2026-03-02", l["partition"])
				}
				t.Logf("SeamPartitionBlocked %s %.1f s after the seal", a.State, time.Since(blocked).Seconds())
				if res, err := promQuery(t, addr, `max_over_time(scrape_duration_seconds[1m])`); err == nil && len(res) == 1 {
					t.Logf("longest scrape of /metrics in the last minute: %v s", res[0]["value"].([]any)[1])
				}
				return
			}
		}
		if time.Since(blocked) > 15*time.Second {
			t.Fatalf("no SeamPartitionBlocked for shop.orders 15 s after its first BLOCKED seal; alerts: %+v", got.Data.Alerts)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
