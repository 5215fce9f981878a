package node_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
)

// srCall is one call of the Confluent Schema Registry REST API made with
// net/http alone, as its documentation describes it: a second client,
// independent of franz-go's, that builds without cgo.
type srCall struct {
	method, path, body string
	// auth is the Authorization header ("" for none).
	auth string
}

func (c srCall) do(t *testing.T, n *seamtest.Node) (int, []byte) {
	t.Helper()
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	req, err := http.NewRequest(c.method, "http://"+n.HTTPAddr+"/apis/ccompat/v7"+c.path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	req.Header.Set("Accept", "application/vnd.schemaregistry.v1+json")
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", c.method, c.path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, raw
}

func basic(token string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte("kafka-producer:"+token))
}

// schemaBody is a register, lookup or compatibility body.
func schemaBody(t *testing.T, schema, schemaType string) string {
	t.Helper()
	m := map[string]string{"schema": schema}
	if schemaType != "" {
		m["schemaType"] = schemaType
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestConfluentAPIOverPlainHTTP makes the registry calls a serializer
// makes, and the ones it gets wrong, with net/http and basic auth (the
// Seam token as the password), and checks Confluent's status codes and
// error codes.
func TestConfluentAPIOverPlainHTTP(t *testing.T) {
	t.Parallel()
	n := seamtest.StartNode(t)
	admin := basic(n.Admin)
	avro := `{"type":"record","name":"Click","fields":[{"name":"url","type":"string"},{"name":"ms","type":"long"}]}`

	type want = srWant
	check := func(c srCall, w want) []byte {
		t.Helper()
		return srCheck(t, n, c, w)
	}

	// Credentials: none, unknown, bearer, basic.
	check(srCall{method: "GET", path: "/subjects"}, want{401, 40101, "basic"})
	check(srCall{method: "GET", path: "/subjects", auth: basic("seam_not_a_token")}, want{401, 40101, "not known"})
	check(srCall{method: "GET", path: "/subjects", auth: "Bearer " + n.Admin}, want{200, 0, "[]"})
	check(srCall{method: "GET", path: "/schemas/types", auth: admin}, want{200, 0, `"AVRO"`})

	// Register, then read back every way a client does.
	var reg struct {
		ID int `json:"id"`
	}
	body := check(srCall{method: "POST", path: "/subjects/clicks-value/versions", body: schemaBody(t, avro, ""), auth: admin}, want{200, 0, `"id"`})
	if err := json.Unmarshal(body, &reg); err != nil || reg.ID < 1 {
		t.Fatalf("register: got %s, want {\"id\": n}", body)
	}
	id := itoa(reg.ID)
	check(srCall{method: "POST", path: "/subjects/clicks-value/versions", body: schemaBody(t, avro, "AVRO"), auth: admin}, want{200, 0, `"id":` + id})
	check(srCall{method: "GET", path: "/subjects", auth: admin}, want{200, 0, `["clicks-value"]`})
	check(srCall{method: "GET", path: "/subjects/clicks-value/versions", auth: admin}, want{200, 0, `[1]`})
	check(srCall{method: "GET", path: "/subjects/clicks-value/versions/latest", auth: admin}, want{200, 0, `"id":` + id})
	check(srCall{method: "GET", path: "/subjects/clicks-value/versions/1/schema", auth: admin}, want{200, 0, `"name":"Click"`})
	check(srCall{method: "GET", path: "/schemas/ids/" + id, auth: admin}, want{200, 0, `Click`})
	check(srCall{method: "GET", path: "/schemas/ids/" + id + "/versions", auth: admin}, want{200, 0, `{"subject":"clicks-value","version":1}`})
	check(srCall{method: "POST", path: "/subjects/clicks-value", body: schemaBody(t, avro, ""), auth: admin}, want{200, 0, `"version":1`})
	check(srCall{method: "GET", path: "/config", auth: admin}, want{200, 0, `"compatibilityLevel":"BACKWARD"`})
	check(srCall{method: "GET", path: "/config/clicks-value", auth: admin}, want{200, 0, `"compatibilityLevel":"BACKWARD"`})

	// What is not there, and what Seam refuses.
	check(srCall{method: "GET", path: "/subjects/nothing-value/versions", auth: admin}, want{404, 40401, "nothing-value"})
	check(srCall{method: "GET", path: "/subjects/clicks-value/versions/7", auth: admin}, want{404, 40402, "version 7"})
	check(srCall{method: "GET", path: "/schemas/ids/9999", auth: admin}, want{404, 40403, "9999"})
	check(srCall{method: "POST", path: "/subjects/clicks-value", body: schemaBody(t, `{"type":"record","name":"Other","fields":[{"name":"a","type":"int"}]}`, ""), auth: admin}, want{404, 40403, "not found"})
	check(srCall{method: "POST", path: "/subjects/clicks-value/versions", body: schemaBody(t, `{"type":"record","name":"Bad","fields":[{"name":"a","type":"nonsense"}]}`, ""), auth: admin}, want{422, 42201, "nonsense"})
	check(srCall{method: "POST", path: "/subjects/clicks-value/versions", body: schemaBody(t, `syntax = "proto3"; message M { string a = 1; }`, "PROTOBUF"), auth: admin}, want{422, 42201, "PROTOBUF"})
	check(srCall{method: "POST", path: "/subjects/9lives-value/versions", body: schemaBody(t, avro, ""), auth: admin}, want{422, 422, "9lives"})
	check(srCall{method: "DELETE", path: "/subjects/clicks-value", auth: admin}, want{422, 42205, "cannot be deleted"})
	check(srCall{method: "DELETE", path: "/subjects/clicks-value/versions/1", auth: admin}, want{422, 42205, "active version"})
	check(srCall{method: "PUT", path: "/config/clicks-value", body: `{"compatibility":"NONE"}`, auth: admin}, want{422, 42205, "versioned contract"})
	check(srCall{method: "PUT", path: "/config/clicks-value", body: `{"compatibility":"BACKWARD"}`, auth: admin}, want{200, 0, `"compatibility":"BACKWARD"`})

	// A viewer reads but may not register; a token scoped to other
	// subjects neither registers nor sees clicks-value.
	viewer := basic(n.Viewer)
	check(srCall{method: "GET", path: "/schemas/ids/" + id, auth: viewer}, want{200, 0, "Click"})
	check(srCall{method: "POST", path: "/subjects/clicks-value/versions", body: schemaBody(t, avro, ""), auth: viewer}, want{403, 40301, "viewer"})
	out, errOut, code := seamtest.Run(t.Context(), "token", "create", "team-pay", "--role", "owner", "--subject", "payments.*", "--reason", "kafka producers", "-o", "json", "--data-dir", n.DataDir)
	if code != 0 {
		t.Fatalf("seam token create: exit %d\n%s%s", code, out, errOut)
	}
	var created struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal([]byte(out), &created); err != nil {
		t.Fatal(err)
	}
	scoped := basic(created.Token)
	// The server reads its tokens file again within a second or so.
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, _ := srCall{method: "GET", path: "/subjects", auth: scoped}.do(t, n)
		if status == 200 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	check(srCall{method: "GET", path: "/subjects", auth: scoped}, want{200, 0, "[]"})
	check(srCall{method: "POST", path: "/subjects/clicks-value/versions", body: schemaBody(t, avro, ""), auth: scoped}, want{403, 40301, "clicks.value"})
	check(srCall{method: "GET", path: "/subjects/clicks-value/versions", auth: scoped}, want{403, 40301, "clicks.value"})
	check(srCall{method: "GET", path: "/schemas/ids/" + id, auth: scoped}, want{404, 40403, id})
	check(srCall{method: "POST", path: "/subjects/payments-value/versions", body: schemaBody(t, avro, ""), auth: scoped}, want{200, 0, `"id":` + id})
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
