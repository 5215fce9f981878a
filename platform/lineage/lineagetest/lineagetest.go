// Package lineagetest is an OpenLineage collector for tests: an HTTP
// endpoint that answers as its script says and keeps the events it
// accepted, as Marquez or DataHub would receive them.
package lineagetest

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"
)

// Collector is an http.Handler taking OpenLineage events. It answers each
// request with the next status of Script, 200 once the script runs out
// (429 with a Retry-After), and keeps the requests it answered with a 2xx.
// Its zero value accepts everything.
type Collector struct {
	// Script is the status of each request in turn; set it before the
	// first request.
	Script []int
	// Hold, when set, makes every request wait until it is closed.
	Hold chan struct{}

	mu       sync.Mutex
	requests int
	accepted []Request
}

// Request is one event the collector accepted.
type Request struct {
	Method, Path string
	Header       http.Header
	// Body is the event as sent, uncompressed when it came gzipped.
	Body []byte
}

func (c *Collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if c.Hold != nil {
		select {
		case <-c.Hold:
		case <-r.Context().Done():
			return
		}
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	data, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests++
	status := http.StatusOK
	if len(c.Script) > 0 {
		status, c.Script = c.Script[0], c.Script[1:]
	}
	if status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "120")
	}
	if status/100 == 2 {
		c.accepted = append(c.accepted, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: data})
	}
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"status": %d}`, status)
}

// Requests returns how many requests came, accepted or not.
func (c *Collector) Requests() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests
}

// Accepted returns the requests accepted so far, in the order they came.
func (c *Collector) Accepted() []Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Request(nil), c.accepted...)
}

// Bodies returns the events accepted so far, in the order they came.
func (c *Collector) Bodies() []string {
	var out []string
	for _, r := range c.Accepted() {
		out = append(out, string(r.Body))
	}
	return out
}

// Await returns the accepted requests once there are n, and fails the
// test when there are not exactly n within timeout.
func (c *Collector) Await(t testing.TB, n int, timeout time.Duration) []Request {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := c.Accepted()
		if len(got) >= n || time.Now().After(deadline) {
			if len(got) != n {
				t.Fatalf("the collector got %d events, want %d", len(got), n)
			}
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
}
