package recordtest

import "fmt"

// RandomUUID returns a version 4 (random) UUID, the same for the same i:
// a customer id of the new service that no rule maps back to the integer,
// so only a lookup table will do.
func RandomUUID(i int) string {
	x := uint64(i)*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
	y := x*0xbf58476d1ce4e5b9 ^ x>>31
	return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", uint32(x>>32), uint16(x>>16), uint16(y)&0xfff, uint16(y>>16)&0x3fff|0x8000, y>>8&0xffffffffffff)
}
