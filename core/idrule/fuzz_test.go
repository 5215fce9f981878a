package idrule_test

import (
	"strconv"
	"testing"

	"github.com/seamdata/seam/core/idrule"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
)

// FuzzParseInt checks that ParseInt accepts exactly the canonical spelling.
func FuzzParseInt(f *testing.F) {
	for _, s := range []string{"0", "-1", "007", "+3", "9223372036854775808", "-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := idrule.ParseInt(s)
		if !ok {
			return
		}
		if got := strconv.FormatInt(v, 10); got != s {
			t.Errorf("ParseInt(%q) = %d, whose canonical form is %q: two spellings of one number", s, v, got)
		}
	})
}

// FuzzParseUUID checks that ParseUUID accepts exactly the canonical spelling.
func FuzzParseUUID(f *testing.F) {
	f.Add("0189c5e4-7f6a-7c3e-9b1a-2f4d6e8a0b1c")
	f.Add("0189C5E4-7F6A-7C3E-9B1A-2F4D6E8A0B1C")
	f.Fuzz(func(t *testing.T, s string) {
		u, ok := idrule.ParseUUID(s)
		if ok && idrule.FormatUUID(u) != s {
			t.Errorf("ParseUUID(%q) accepted a non-canonical spelling of %s", s, idrule.FormatUUID(u))
		}
	})
}

// FuzzTemplateOneToOne checks that whatever string parses back under a
// template is exactly the rendering of the number it parses to.
func FuzzTemplateOneToOne(f *testing.F) {
	intF, _ := idrule.NewFormat("f", &idmapv1.Format{Name: "legacy-int", Kind: idmapv1.FormatKind_FORMAT_KIND_INT})
	codeF, _ := idrule.NewFormat("f", &idmapv1.Format{Name: "code", Kind: idmapv1.FormatKind_FORMAT_KIND_STRING})
	c, err := idrule.Compile(&idmapv1.Rule{FromFormat: "legacy-int", ToFormat: "code", Reversible: true,
		Strategy: &idmapv1.Rule_Template{Template: &idmapv1.TemplateRule{Template: "CUST-{int:06}-X"}}}, intF, codeF)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"CUST-000042-X", "CUST-0000042-X", "CUST-1234567-X", "CUST--X"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, st := c.Reverse(s)
		if st != idrule.Hit {
			return
		}
		again, st := c.Forward(n)
		if st != idrule.Hit || again != s {
			t.Errorf("reverse(%q) = %s, but forward(%s) = %q (%s): not one-to-one", s, n, n, again, st)
		}
	})
}
