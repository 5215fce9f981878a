package idtable

import (
	"runtime"
	"syscall"
	"unsafe"
)

// hugeMin is the table size from which slots live in their own mapping
// advised to use transparent huge pages. A 10M-pair table spans hundreds of
// megabytes; with 4 KiB pages nearly every lookup also misses the TLB, and
// under virtualisation a TLB miss costs several memory reads of its own.
const hugeMin = 64 << 20

// allocSlots returns n zeroed slots. Pointer-free slot types of large
// tables are mapped outside the Go heap (the GC never needs to scan them)
// and released by a cleanup when owner becomes unreachable.
func allocSlots[K comparable, V comparable](owner *dir[K, V], n int) []slot[K, V] {
	var s slot[K, V]
	size := int(unsafe.Sizeof(s)) * n
	if size < hugeMin || hasPointers[K]() || hasPointers[V]() {
		return make([]slot[K, V], n)
	}
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return make([]slot[K, V], n)
	}
	// Advice only: without THP the mapping still works with small pages.
	_ = syscall.Madvise(mem, 14) // MADV_HUGEPAGE
	runtime.AddCleanup(owner, func(m []byte) { _ = syscall.Munmap(m) }, mem)
	owner.mapped = size
	return unsafe.Slice((*slot[K, V])(unsafe.Pointer(&mem[0])), n)
}

// hasPointers reports whether T holds pointers; only int64 and [16]byte
// keys and values are pointer-free here.
func hasPointers[T any]() bool {
	var v T
	switch any(v).(type) {
	case int64, [16]byte:
		return false
	default:
		return true
	}
}
