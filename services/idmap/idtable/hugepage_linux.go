package idtable

import (
	"runtime"
	"syscall"
	"unsafe"
)

// hugeMin is the array size from which arrays live in their own mapping
// advised to use transparent huge pages. A 10M-pair table spans hundreds of
// megabytes; with 4 KiB pages nearly every lookup also misses the TLB, and
// under virtualisation a TLB miss costs several memory reads of its own.
const hugeMin = 64 << 20

// allocArray returns n zeroed elements. Pointer-free element types of
// large arrays are mapped outside the Go heap (the GC never needs to scan
// them), counted in *mapped, and released by a cleanup when owner becomes
// unreachable; owner must be what keeps the array reachable.
func allocArray[T any, O any](owner *O, mapped *int, n int) []T {
	var v T
	size := int(unsafe.Sizeof(v)) * n
	if size < hugeMin || hasPointers[T]() {
		return make([]T, n)
	}
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return make([]T, n)
	}
	// Advice only: without THP the mapping still works with small pages.
	_ = syscall.Madvise(mem, 14) // MADV_HUGEPAGE
	runtime.AddCleanup(owner, func(m []byte) { _ = syscall.Munmap(m) }, mem)
	*mapped += size
	return unsafe.Slice((*T)(unsafe.Pointer(&mem[0])), n)
}

// hasPointers reports whether T holds pointers; only int64, uint64 and
// [16]byte elements are pointer-free here.
func hasPointers[T any]() bool {
	var v T
	switch any(v).(type) {
	case int64, uint64, [16]byte:
		return false
	default:
		return true
	}
}
