package contracttest

import (
	"fmt"
	"strings"
)

// AliasBomb returns a "billion laughs" contract document: leaf anchored
// once, then depth levels of ten aliases of the level below, inside a
// mapping constant, which takes any value, so nothing but its expanded
// size is wrong with it. Nine levels of a 390 KB leaf is the 400 KB file
// that once drove `seam validate` to 24 GB.
func AliasBomb(depth int, leaf string) []byte {
	var b strings.Builder
	b.WriteString("subject: shop.bomb\nmapping:\n  fields:\n    x:\n      constant:\n")
	fmt.Fprintf(&b, "        a0: &a0 %q\n", leaf)
	for i := 1; i <= depth; i++ {
		fmt.Fprintf(&b, "        a%d: &a%d [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	return []byte(b.String())
}
