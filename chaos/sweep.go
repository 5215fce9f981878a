package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/seamdata/seam/proto/openapi"
)

// restRoute is one REST route of the OpenAPI document, its parameters
// filled in.
type restRoute struct {
	method, path string
}

var pathParam = regexp.MustCompile(`\{[^}]+\}`)

// restRoutes lists every REST route, with {subject} the corpus's subject
// (outside the scoped pipeline's) and other parameters a plain value.
func restRoutes() ([]restRoute, error) {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openapi.Document, &doc); err != nil {
		return nil, fmt.Errorf("read the OpenAPI document: %w", err)
	}
	var out []restRoute
	for p, ops := range doc.Paths {
		filled := pathParam.ReplaceAllStringFunc(p, func(param string) string {
			switch param {
			case "{subject}":
				return subject
			case "{sequence}", "{version}":
				return "1"
			}
			return "x"
		})
		for m := range ops {
			out = append(out, restRoute{method: strings.ToUpper(m), path: filled})
		}
	}
	slices.SortFunc(out, func(a, b restRoute) int { return strings.Compare(a.path+a.method, b.path+b.method) })
	return out, nil
}

// sweepBody is one hostile body: how it is framed and sent.
type sweepBody struct {
	name    string
	headers string
	body    func() io.Reader
}

// drip sends a byte every 200 ms, up to n bytes.
type drip struct{ left int }

func (d *drip) Read(p []byte) (int, error) {
	if d.left <= 0 {
		return 0, io.EOF
	}
	time.Sleep(200 * time.Millisecond)
	d.left--
	p[0] = ' '
	return 1, nil
}

func gzipBomb() []byte {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	_, _ = zw.Write(bytes.Repeat([]byte(" "), 32*mb))
	_ = zw.Close()
	return b.Bytes()
}

// sweep sends every REST route × {no token, wrong token, viewer, a
// pipeline limited to other subjects} × {a 200 MB declared body, a gzip
// bomb, a slow drip}, 30 at a time. A caller refused from its headers
// (401, 403) must be answered in under a second, under +64 MB of server
// memory for the whole group; no answer may be a 5xx.
func (k *corpus) sweep(ctx context.Context) {
	routes, err := restRoutes()
	if err != nil {
		k.check("the REST sweep", "REST", "the routes of the OpenAPI document", 0, func() (string, bool) { return err.Error(), false })
		return
	}
	bomb := gzipBomb()
	bodies := []sweepBody{
		{"a 200 MB body", fmt.Sprintf("Content-Length: %d\r\n", 200*mb), func() io.Reader { return io.LimitReader(spaces(), 200*mb) }},
		{fmt.Sprintf("a %d KB gzip bomb (32 MiB inflated)", len(bomb)>>10), fmt.Sprintf("Content-Encoding: gzip\r\nContent-Length: %d\r\n", len(bomb)),
			func() io.Reader { return bytes.NewReader(bomb) }},
		{"a slow drip (5 bytes a second)", "Content-Length: 100000\r\n", func() io.Reader { return &drip{left: 100000} }},
	}
	callers := []struct{ name, token string }{
		{"no token", ""},
		{"a wrong token", "seam_0000000000000000000000000000000"},
		{"a viewer", k.c.tokens["viewer"]},
		{"a pipeline limited to other.*", k.c.tokens["pipeline-other"]},
	}
	for _, caller := range callers {
		for _, body := range bodies {
			name := fmt.Sprintf("%d routes × %s × %s, 30 at a time", len(routes), caller.name, body.name)
			want := "401 in under 1 s each, under +64 MB"
			if caller.token != "" && !strings.HasPrefix(caller.name, "a wrong") {
				want = "403 (or an answer the role allows) in under 1 s when refused, under +64 MB; never a 5xx"
			}
			// A caller the route allows has its body read, up to the
			// inflated limit: that memory is the limit's, not a leak, so
			// only its growth is reported.
			// Their inflating shares the 2 cores with the refusals beside
			// them, so those get 2 s there.
			limit, maxRefusal := int64(64*mb), time.Second
			if caller.token != "" && !strings.HasPrefix(caller.name, "a wrong") && strings.Contains(body.name, "gzip") {
				limit, maxRefusal = 0, 2*time.Second
				want = "403 in under 2 s when refused from the headers (the bodies the role allows are inflated up to the limit beside them); never a 5xx"
			}
			k.check(name, "REST", want, limit, func() (string, bool) {
				return k.sweepOne(ctx, routes, caller.token, caller.token == "" || strings.HasPrefix(caller.name, "a wrong"), body, maxRefusal)
			})
		}
	}
}

// sweepOne sends body to every route as the holder of token.
func (k *corpus) sweepOne(ctx context.Context, routes []restRoute, token string, mustRefuse bool, body sweepBody, maxRefusal time.Duration) (string, bool) {
	type answer struct {
		route    restRoute
		code     int
		took     time.Duration
		err      error
		fromBody bool
	}
	answers := make([]answer, len(routes))
	sem := make(chan struct{}, 30)
	var wg sync.WaitGroup
	for i, rt := range routes {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			head := rt.method + " " + rt.path + " HTTP/1.1\r\nHost: seam\r\nContent-Type: application/json\r\n" + body.headers
			if token != "" {
				head += "Authorization: Bearer " + token + "\r\n"
			}
			// A watch the caller may open streams until the client
			// leaves: its answer is its status line, which comes at once.
			wait := k.c.readTimeout + 10*time.Second
			if strings.HasSuffix(rt.path, ":watch") || strings.HasSuffix(rt.path, ":wait") {
				wait = 5 * time.Second
			}
			began := time.Now()
			code, text, err := httpStatus(k.node.httpAddr, head+"\r\n", body.body(), wait)
			var ne net.Error
			if (strings.HasSuffix(rt.path, ":watch") || strings.HasSuffix(rt.path, ":wait")) && errors.As(err, &ne) && ne.Timeout() {
				// The gateway sends a watch's status line with its first
				// message: an allowed watch with nothing to say is open.
				code, err = 0, nil
			}
			// A subject named in the body (a replay window, a quarantine
			// filter) is checked once the body is decoded, through the
			// bounded reader; everything else is refused from the headers.
			fromBody := code == http.StatusForbidden && strings.Contains(text, "SUBJECT_OUT_OF_SCOPE") && !strings.Contains(text, `; subject \"`)
			answers[i] = answer{rt, code, time.Since(began), err, fromBody}
		})
	}
	wg.Wait()
	counts := map[int]int{}
	var slowest time.Duration
	var bad []string
	for _, a := range answers {
		counts[a.code]++
		refused := (a.code == http.StatusUnauthorized || a.code == http.StatusForbidden) && !a.fromBody
		if a.fromBody {
			counts[-1]++
			counts[a.code]--
		}
		if refused && a.took > slowest {
			slowest = a.took
		}
		switch {
		case a.err != nil:
			bad = append(bad, fmt.Sprintf("%s %s: %v", a.route.method, a.route.path, a.err))
		case a.code >= 500:
			bad = append(bad, fmt.Sprintf("%s %s: %d", a.route.method, a.route.path, a.code))
		case mustRefuse && a.code != http.StatusUnauthorized:
			bad = append(bad, fmt.Sprintf("%s %s: %d, want 401", a.route.method, a.route.path, a.code))
		case refused && a.took > maxRefusal:
			bad = append(bad, fmt.Sprintf("%s %s: %d after %s", a.route.method, a.route.path, a.code, a.took.Round(10*time.Millisecond)))
		}
	}
	var parts []string
	for _, c := range slices.Sorted(mapsKeys(counts)) {
		label := fmt.Sprint(c)
		switch c {
		case 0:
			label = "watch open"
		case -1:
			label = "403 after reading the body (subject in the body)"
		}
		parts = append(parts, fmt.Sprintf("%d×%s", counts[c], label))
	}
	got := fmt.Sprintf("%s; slowest refusal %s", strings.Join(parts, ", "), slowest.Round(10*time.Millisecond))
	if len(bad) > 0 {
		got += "; " + clip(strings.Join(bad, "; "), 300)
	}
	return got, len(bad) == 0
}

// httpStatus is httpAnswer that waits at most wait for the status line
// and reads at most 4 KB of an error's body.
func httpStatus(addr, head string, body io.Reader, wait time.Duration) (int, string, error) {
	return httpExchange(addr, head, body, wait, func(status int) bool { return status >= 400 })
}

func mapsKeys(m map[int]int) func(func(int) bool) {
	return func(yield func(int) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// badNames sweeps every call that takes a name with names that break the
// naming rule: each must be refused 400 naming the field, never stored
// (2xx) and never a 5xx.
func (k *corpus) badNames(ctx context.Context) {
	names := []struct{ label, value string }{
		{"../x", "../x"},
		{"2,000 characters", strings.Repeat("n", 2000)},
		{"NUL", "a\x00b"},
		{"newline", "a\nb"},
		{"zero-width space", "a\u200bb"},
		{"backslash", `a\b`},
	}
	type call struct {
		name, method string
		path         func(string) string
		body         func(string) string
		field        string
	}
	q := func(v string) string { b, _ := json.Marshal(v); return string(b) }
	seg := func(v string) string { return url.PathEscape(v) }
	calls := []call{
		{"ingest partition", "POST", func(string) string { return "/v1/subjects/" + subject + ":ingest" },
			func(v string) string {
				return `{"partition":` + q(v) + `,"batch_id":"n1","batch":{"objects":{"records":[{"settlement_id":"STL-0000000001"}]}}}`
			}, "partition"},
		{"ingest batch id", "POST", func(string) string { return "/v1/subjects/" + subject + ":ingest" },
			func(v string) string {
				return `{"partition":"2026-04-01","batch_id":` + q(v) + `,"batch":{"objects":{"records":[{"settlement_id":"STL-0000000001"}]}}}`
			}, "batch_id"},
		{"seal partition", "POST", func(v string) string { return "/v1/subjects/" + subject + "/partitions/" + seg(v) + ":seal" },
			func(string) string { return `{}` }, "partition"},
		{"get partition", "GET", func(v string) string { return "/v1/subjects/" + subject + "/partitions/" + seg(v) }, nil, "partition"},
		{"quarantine filter", "POST", func(string) string { return "/v1/quarantine:list" },
			func(v string) string {
				return `{"filter":{"subject":` + q(subject) + `,"partition_from":` + q(v) + `}}`
			}, "partition_from"},
		{"contain", "POST", func(v string) string { return "/v1/subjects/" + seg(v) + ":contain" },
			func(string) string { return `{"reason":"sweep"}` }, "subject"},
		{"replay window", "POST", func(string) string { return "/v1/replay:plan" },
			func(v string) string {
				return `{"window":{"subject":` + q(subject) + `,"partition_from":"2026-04-01","partition_to":` + q(v) + `}}`
			}, "partition_to"},
		{"replay id", "POST", func(string) string { return "/v1/replay" },
			func(v string) string {
				return `{"window":{"subject":` + q(subject) + `,"partition_from":"2026-04-01","partition_to":"2026-04-01"},"replay_id":` + q(v) + `}`
			}, "replay_id"},
		{"consumer name", "POST", func(string) string { return "/v1/consumers" },
			func(v string) string {
				return `{"consumer":{"name":` + q(v) + `,"inputs":[{"subject":` + q(subject) + `}]}}`
			}, "name"},
		{"delete consumer", "DELETE", func(v string) string { return "/v1/consumers/" + seg(v) }, nil, "name"},
	}
	k.check(fmt.Sprintf("%d calls × %d bad names", len(calls), len(names)), "REST", "400 naming the field each time; 0 × 5xx, 0 × 2xx", 0, func() (string, bool) {
		var bad []string
		counts := map[int]int{}
		for _, c := range calls {
			for _, n := range names {
				var body io.Reader
				if c.body != nil {
					body = strings.NewReader(c.body(n.value))
				}
				req, err := http.NewRequestWithContext(ctx, c.method, "http://"+k.node.httpAddr+c.path(n.value), body)
				if err != nil {
					// A name no URL can carry is refused by the client.
					counts[0]++
					continue
				}
				req.Header.Set("Authorization", "Bearer "+k.c.tokens["admin"])
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					bad = append(bad, fmt.Sprintf("%s %s: %v", c.name, n.label, err))
					continue
				}
				text, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<10))
				resp.Body.Close()
				counts[resp.StatusCode]++
				switch {
				case resp.StatusCode >= 500 || resp.StatusCode < 300:
					bad = append(bad, fmt.Sprintf("%s %s: %d %s", c.name, n.label, resp.StatusCode, clip(string(text), 80)))
				case resp.StatusCode == 400 && !strings.Contains(string(text), c.field):
					bad = append(bad, fmt.Sprintf("%s %s: 400 not naming %s: %s", c.name, n.label, c.field, clip(string(text), 80)))
				}
			}
		}
		var parts []string
		for _, c := range slices.Sorted(mapsKeys(counts)) {
			parts = append(parts, fmt.Sprintf("%d×%d", counts[c], c))
		}
		got := strings.Join(parts, ", ")
		if len(bad) > 0 {
			got += "; " + clip(strings.Join(bad, "; "), 400)
		}
		return got, len(bad) == 0
	})
}
