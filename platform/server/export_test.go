package server

// The fixtures of the internal tests, for the external ones.
var ServeLoopback = serveLoopback
