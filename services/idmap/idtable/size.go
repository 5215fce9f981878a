package idtable

import "unsafe"

// sizeOf reports a slot's size for Bytes; strings count their header only.
func sizeOf[T any](v T) uintptr { return unsafe.Sizeof(v) }
