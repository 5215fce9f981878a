//go:build !linux

package idtable

// allocArray returns n zeroed elements on the Go heap.
func allocArray[T any, O any](_ *O, _ *int, n int) []T {
	return make([]T, n)
}
