//go:build !linux

package idtable

// allocSlots returns n zeroed slots on the Go heap.
func allocSlots[K comparable, V comparable](_ *dir[K, V], n int) []slot[K, V] {
	return make([]slot[K, V], n)
}
