package lineagetest_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/seamdata/seam/platform/lineage/lineagetest"
)

// The collector answers as scripted, keeps only what it accepted, and
// unpacks gzipped events.
func TestCollectorFollowsItsScript(t *testing.T) {
	t.Parallel()
	c := &lineagetest.Collector{Script: []int{503, 429, 201}}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	post := func(body string, gz bool) *http.Response {
		t.Helper()
		var b bytes.Buffer
		if gz {
			zw := gzip.NewWriter(&b)
			if _, err := zw.Write([]byte(body)); err != nil {
				t.Fatal(err)
			}
			if err := zw.Close(); err != nil {
				t.Fatal(err)
			}
		} else {
			b.WriteString(body)
		}
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/lineage", &b)
		if err != nil {
			t.Fatal(err)
		}
		if gz {
			req.Header.Set("Content-Encoding", "gzip")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp
	}
	for i, want := range []int{503, 429, 201, 200} {
		resp := post(fmt.Sprintf(`{"n":%d}`, i), i == 3)
		if resp.StatusCode != want {
			t.Errorf("request %d answered %d, want %d", i, resp.StatusCode, want)
		}
		if want == 429 && resp.Header.Get("Retry-After") == "" {
			t.Errorf("a 429 without Retry-After")
		}
	}
	got := c.Await(t, 2, time.Second)
	if c.Requests() != 4 || string(got[0].Body) != `{"n":2}` || string(got[1].Body) != `{"n":3}` || got[1].Path != "/api/v1/lineage" || got[1].Method != http.MethodPost {
		t.Errorf("%d requests, accepted %+v; want 4 requests and the last two events, the gzipped one unpacked", c.Requests(), got)
	}
	if b := c.Bodies(); len(b) != 2 || b[1] != `{"n":3}` {
		t.Errorf("Bodies = %q, want the two accepted events", b)
	}
}
