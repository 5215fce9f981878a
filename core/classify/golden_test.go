package classify_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/seamdata/seam/core/classify"
	"github.com/seamdata/seam/core/examples"
	"github.com/seamdata/seam/core/internal/goldentest"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// render prints a classification as a reviewer reads it.
func render(res classify.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "breaking: %v\n", res.Breaking)
	for _, ch := range res.Changes {
		fmt.Fprintf(&b, "%s %s %s (v%d)\n  old: %q\n  new: %q\n  %s\n",
			strings.TrimPrefix(ch.GetLevel().String(), "CHANGE_LEVEL_"), ch.GetRule(), ch.GetPath(),
			ch.GetComparedVersion(), ch.GetOldValue(), ch.GetNewValue(), ch.GetMessage())
	}
	return b.String()
}

// TestShopOrdersV2 is the seed incident: customer_id moves from an INT64
// legacy id to a UUID. Under the subject's BACKWARD mode that must be
// breaking, naming both the type and the identifier format change.
func TestShopOrdersV2(t *testing.T) {
	t.Parallel()
	v1, v2 := examples.ShopOrdersV1(), examples.ShopOrdersV2()
	res := classify.Classify([]*contractv1.Contract{v1}, v2, v1.GetCompatibility())
	if !res.Breaking {
		t.Errorf("Breaking = false, want true")
	}
	for _, rule := range []string{classify.FieldTypeChanged, classify.IdentifierFormatChanged} {
		found := false
		for _, ch := range res.Changes {
			if ch.GetRule() == rule {
				found = true
				if ch.GetLevel() != registryv1.ChangeLevel_CHANGE_LEVEL_BREAKING {
					t.Errorf("%s level = %s, want BREAKING", rule, ch.GetLevel())
				}
			}
		}
		if !found {
			t.Errorf("no %s change in %v", rule, got(res.Changes))
		}
	}
	var all bytes.Buffer
	for _, mode := range modes[1:] {
		fmt.Fprintf(&all, "== %s\n%s\n", strings.TrimPrefix(mode.String(), "COMPATIBILITY_"),
			render(classify.Classify([]*contractv1.Contract{v1}, v2, mode)))
	}
	goldentest.Check(t, "shop_orders_v1_v2.golden", all.String())
}
