package node_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/seamdata/seam/cmd/seam/internal/node"
	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
	"github.com/seamdata/seam/platform/storage/storagetest"
)

// srWant is what a call of the Confluent API should answer.
type srWant struct {
	status int
	// code is the error_code of an error answer; 0 for success.
	code int
	// has must appear in the body.
	has string
}

func srCheck(t *testing.T, n *seamtest.Node, c srCall, w srWant) []byte {
	t.Helper()
	status, body := c.do(t, n)
	if status != w.status || !bytes.Contains(body, []byte(w.has)) {
		t.Fatalf("%s %s: got %d %s, want %d containing %q", c.method, c.path, status, body, w.status, w.has)
	}
	if w.code != 0 {
		var e struct {
			ErrorCode int    `json:"error_code"`
			Message   string `json:"message"`
		}
		if err := json.Unmarshal(body, &e); err != nil || e.ErrorCode != w.code || e.Message == "" {
			t.Fatalf("%s %s: got body %s, want error_code %d with a message", c.method, c.path, body, w.code)
		}
	}
	return body
}

// TestConfluentDeleteAndRestart deletes versions as Confluent's API
// defines it (soft, then ?permanent=true) under Seam's rules, and checks
// that schema ids, versions and deletions survive a restart of seam up,
// on SQLite and PostgreSQL.
func TestConfluentDeleteAndRestart(t *testing.T) {
	t.Parallel()
	storagetest.Each(t, func(t *testing.T, store string) {
		t.Parallel()
		n := seamtest.StartNodeWith(t, func(c *node.Config) {
			if !strings.HasPrefix(store, "sqlite:") {
				c.Store = store
			}
		})
		admin := basic(n.Admin)
		v1 := `{"type":"record","name":"View","fields":[{"name":"page","type":"string"}]}`
		v2 := `{"type":"record","name":"View","fields":[{"name":"page","type":"string"},{"name":"ref","type":["null","string"],"default":null}]}`
		v3 := `{"type":"record","name":"View","fields":[{"name":"page","type":"string"},{"name":"ref","type":["null","string"],"default":null},{"name":"ms","type":["null","long"],"default":null}]}`
		register := func(schema string) string {
			t.Helper()
			body := srCheck(t, n, srCall{method: "POST", path: "/subjects/views-value/versions", body: schemaBody(t, schema, "AVRO"), auth: admin}, srWant{200, 0, `"id"`})
			var r struct {
				ID int `json:"id"`
			}
			if err := json.Unmarshal(body, &r); err != nil || r.ID < 1 {
				t.Fatalf("register: got %s, want {\"id\": n}", body)
			}
			return itoa(r.ID)
		}
		id1, id2 := register(v1), register(v2)
		if id1 == id2 {
			t.Fatalf("two schemas got the same id %s", id1)
		}
		check := func(c srCall, w srWant) { t.Helper(); c.auth = admin; srCheck(t, n, c, w) }

		// The active version is not deleted; an older one is, softly.
		check(srCall{method: "DELETE", path: "/subjects/views-value/versions/2"}, srWant{422, 42205, "active version"})
		check(srCall{method: "DELETE", path: "/subjects/views-value/versions/2?permanent=true"}, srWant{404, 40407, "not deleted first"})
		check(srCall{method: "DELETE", path: "/subjects/views-value/versions/1"}, srWant{200, 0, "1"})
		check(srCall{method: "DELETE", path: "/subjects/views-value/versions/1"}, srWant{404, 40406, "soft deleted"})
		check(srCall{method: "DELETE", path: "/subjects/views-value/versions/1?permanent=true"}, srWant{422, 42205, "never erases"})
		check(srCall{method: "DELETE", path: "/subjects/views-value"}, srWant{422, 42205, "active"})
		check(srCall{method: "DELETE", path: "/subjects/views-value?permanent=true"}, srWant{404, 40405, "not deleted first"})
		check(srCall{method: "DELETE", path: "/subjects/nothing-value"}, srWant{404, 40401, "nothing-value"})
		check(srCall{method: "DELETE", path: "/subjects/views-value/versions/9"}, srWant{404, 40402, "version 9"})
		// Viewers delete nothing.
		srCheck(t, n, srCall{method: "DELETE", path: "/subjects/views-value/versions/2", auth: basic(n.Viewer)}, srWant{403, 40301, "viewer"})

		answers := func() {
			t.Helper()
			check(srCall{method: "GET", path: "/subjects/views-value/versions"}, srWant{200, 0, "[2]"})
			check(srCall{method: "GET", path: "/subjects/views-value/versions?deleted=true"}, srWant{200, 0, "[1,2]"})
			check(srCall{method: "GET", path: "/subjects/views-value/versions/1"}, srWant{404, 40402, "version 1"})
			check(srCall{method: "GET", path: "/subjects/views-value/versions/1?deleted=true"}, srWant{200, 0, `"id":` + id1})
			check(srCall{method: "GET", path: "/subjects/views-value/versions/latest"}, srWant{200, 0, `"id":` + id2})
			check(srCall{method: "POST", path: "/subjects/views-value", body: schemaBody(t, v1, "")}, srWant{404, 40403, "not found"})
			check(srCall{method: "POST", path: "/subjects/views-value?deleted=true", body: schemaBody(t, v1, "")}, srWant{200, 0, `"version":1`})
			check(srCall{method: "POST", path: "/subjects/views-value", body: schemaBody(t, v2, "")}, srWant{200, 0, `"id":` + id2})
			// A deleted version's schema is still read by id, as in
			// Confluent's registry: consumers decode old messages.
			check(srCall{method: "GET", path: "/schemas/ids/" + id1}, srWant{200, 0, "View"})
			check(srCall{method: "GET", path: "/schemas/ids/" + id2 + "/versions"}, srWant{200, 0, `{"subject":"views-value","version":2}`})
			// The subject versions and subjects of a deleted version's
			// schema list it only with ?deleted=true.
			check(srCall{method: "GET", path: "/schemas/ids/" + id1 + "/versions"}, srWant{200, 0, "[]"})
			check(srCall{method: "GET", path: "/schemas/ids/" + id1 + "/versions?deleted=true"}, srWant{200, 0, `{"subject":"views-value","version":1}`})
			check(srCall{method: "GET", path: "/schemas/ids/" + id1 + "/subjects"}, srWant{200, 0, "[]"})
			check(srCall{method: "GET", path: "/schemas/ids/" + id1 + "/subjects?deleted=true"}, srWant{200, 0, `["views-value"]`})
			check(srCall{method: "GET", path: "/schemas/ids/" + id2 + "/subjects"}, srWant{200, 0, `["views-value"]`})
		}
		answers()

		n.Restart(t)
		answers()
		// The same schema registered again answers its id, without a new
		// version; a new schema gets a new id, never one given before.
		if again := register(v2); again != id2 {
			t.Fatalf("after the restart, registering v2 again: id %s, want %s", again, id2)
		}
		check(srCall{method: "GET", path: "/subjects/views-value/versions"}, srWant{200, 0, "[2]"})
		if id3 := register(v3); id3 == id1 || id3 == id2 {
			t.Fatalf("after the restart, a new schema got id %s, given before (%s, %s)", id3, id1, id2)
		}
		check(srCall{method: "GET", path: "/subjects/views-value/versions"}, srWant{200, 0, "[2,3]"})
	})
}
