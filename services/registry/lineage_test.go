package registry

import (
	"errors"
	"slices"
	"testing"

	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

func consumer(name string, produces []string, inputs ...*registryv1.Input) *registryv1.Consumer {
	return &registryv1.Consumer{Name: name, Produces: produces, Inputs: inputs}
}

func fromSubject(s string, fields ...string) *registryv1.Input {
	return &registryv1.Input{Source: &registryv1.Input_Subject{Subject: s}, Fields: fields}
}

func fromDataset(d string) *registryv1.Input {
	return &registryv1.Input{Source: &registryv1.Input_Dataset{Dataset: d}}
}

func TestRerunOrder(t *testing.T) {
	t.Parallel()
	// d reads what b and c produce; c reads b's output; b reads the subject.
	graph := []*registryv1.Consumer{
		consumer("d", nil, fromDataset("b_out"), fromDataset("c_out")),
		consumer("c", []string{"c_out"}, fromDataset("b_out")),
		consumer("b", []string{"b_out"}, fromSubject("src")),
		consumer("a", []string{"a_out"}, fromSubject("src", "x")),
		consumer("unrelated", nil, fromSubject("other")),
	}
	tests := []struct {
		name             string
		subject, dataset string
		consumers        []*registryv1.Consumer
		want             []string
		wantErr          error
	}{
		{name: "subject", subject: "src", consumers: graph, want: []string{"a", "b", "c", "d"}},
		{name: "dataset", dataset: "b_out", consumers: graph, want: []string{"c", "d"}},
		{name: "nothing downstream", dataset: "a_out", consumers: graph, want: nil},
		{name: "cycle", subject: "src", consumers: []*registryv1.Consumer{
			consumer("p", []string{"p_out"}, fromSubject("src"), fromDataset("q_out")),
			consumer("q", []string{"q_out"}, fromDataset("p_out")),
		}, wantErr: errLineageCycle},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := rerunOrder(tt.consumers, rerunRoot{subject: tt.subject, dataset: tt.dataset})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("order = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestChangedField(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path   string
		want   string
		wantOK bool
	}{
		{"fields.customer_id.type", "customer_id", true},
		{"fields.customer_id", "customer_id", true},
		{"fields.address.fields.zip.pattern", "address.zip", true},
		{"compatibility", "", false},
		{"mapping.fields.customer_id", "", false},
	}
	for _, tt := range tests {
		got, ok := changedField(tt.path)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("changedField(%q) = %q, %v; want %q, %v", tt.path, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestBlastRadiusNestedFields(t *testing.T) {
	t.Parallel()
	cs := []*registryv1.Consumer{
		consumer("whole_address", nil, fromSubject("s", "address")),
		consumer("zip_only", nil, fromSubject("s", "address.zip")),
		consumer("city_only", nil, fromSubject("s", "address.city")),
		consumer("everything", nil, fromSubject("s")),
	}
	got := consumerNames(blastRadius(cs, "s", []string{"address.zip"}, nil))
	if want := []string{"everything", "whole_address", "zip_only"}; !slices.Equal(got, want) {
		t.Errorf("consumers of a change to address.zip = %v, want %v", got, want)
	}
}

func TestFeeds(t *testing.T) {
	t.Parallel()
	m := &contractv1.Mapping{Canonical: "banking.transaction", Fields: map[string]*contractv1.FieldMapping{
		"account_number": {From: "account_ref"},
		"label":          {Expr: `src.account_ref + "/" + src["branch"]`},
		"city":           {From: "address.city"},
		"amount":         {From: "amount_cents"},
		"channel":        {Constant: nil},
	}}
	old := &contractv1.Mapping{Canonical: "banking.transaction", Fields: map[string]*contractv1.FieldMapping{"legacy": {From: "acct"}}}
	tests := []struct {
		changed []string
		whole   bool
		want    map[string][]string // canonical field → source fields
	}{
		{[]string{"account_ref"}, false, map[string][]string{"account_number": {"account_ref"}, "label": {"account_ref"}}},
		{[]string{"branch"}, false, map[string][]string{"label": {"branch"}}},
		{[]string{"address"}, false, map[string][]string{"city": {"address"}}},
		{[]string{"acct"}, false, map[string][]string{"legacy": {"acct"}}},
		{[]string{"nothing"}, false, nil},
		{nil, true, map[string][]string{}},
	}
	for _, tt := range tests {
		got := feeds([]*contractv1.Mapping{m, old}, tt.changed, tt.whole)
		if tt.want == nil {
			if len(got) != 0 {
				t.Errorf("feeds(%v) = %v, want nothing reached", tt.changed, got)
			}
			continue
		}
		if len(got) != 1 || got[0].model != "banking.transaction" || got[0].whole != tt.whole || len(got[0].fields) != len(tt.want) {
			t.Errorf("feeds(%v) = %+v, want banking.transaction %v (whole %v)", tt.changed, got, tt.want, tt.whole)
			continue
		}
		for cf, srcs := range tt.want {
			if !slices.Equal(got[0].fields[cf], srcs) {
				t.Errorf("feeds(%v)[%s] = %v, want %v", tt.changed, cf, got[0].fields[cf], srcs)
			}
		}
	}
}
