package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/seamdata/seam/cmd/seam/internal/exit"
)

// DefaultAddr is the gRPC address of `seam up` when neither --addr nor its
// data directory says otherwise.
const DefaultAddr = "127.0.0.1:7070"

// AddressesFileName is the file in the data directory where `seam up`
// writes the addresses it listens on, so a client run with the same
// --data-dir reaches a Seam started on other ports (or on port 0) without
// --addr, as it finds the admin token beside it.
const AddressesFileName = "addresses.json"

// Addresses are where a running `seam up` answers.
type Addresses struct {
	// GRPC is the gRPC address, HTTP the REST address ("" without REST).
	GRPC string `json:"grpc"`
	HTTP string `json:"http,omitempty"`
}

// WriteAddresses records where `seam up` listens in dataDir. An address
// bound to every interface (0.0.0.0:7070, [::]:7070) is written as the
// IPv4 loopback address of the same port, which is how a client on the machine
// reaches it. It returns a func that removes the file, when it still holds
// what was written, for a clean shutdown.
func WriteAddresses(dataDir string, a Addresses) (remove func(), err error) {
	a.GRPC, a.HTTP = reachable(a.GRPC), reachable(a.HTTP)
	data, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return nil, err
	}
	data = append(data, '\n')
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("write the addresses of seam up: %w", err)
	}
	path := filepath.Join(dataDir, AddressesFileName)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return nil, fmt.Errorf("write the addresses of seam up: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("write the addresses of seam up: %w", err)
	}
	return func() {
		// Another seam up on this directory (with a shared store, which
		// takes no lock) may have written its own since: leave that.
		if now, err := os.ReadFile(path); err == nil && string(now) == string(data) {
			_ = os.Remove(path)
		}
	}, nil
}

// ReadAddresses reads the addresses `seam up` wrote into dataDir. A
// directory without the file gives an error satisfying
// errors.Is(err, os.ErrNotExist).
func ReadAddresses(dataDir string) (Addresses, error) {
	path := filepath.Join(dataDir, AddressesFileName)
	data, err := os.ReadFile(path)
	if err != nil {
		return Addresses{}, err
	}
	var a Addresses
	if err := json.Unmarshal(data, &a); err != nil {
		return Addresses{}, fmt.Errorf("%s: %w; delete it or pass --addr", path, err)
	}
	if a.GRPC == "" {
		return Addresses{}, fmt.Errorf("%s names no grpc address; delete it or pass --addr", path)
	}
	return a, nil
}

// reachable turns a listen address on every interface into the loopback
// address of its port.
func reachable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	// Go listens on both IPv4 and IPv6 for 0.0.0.0 and [::] alike, so
	// the IPv4 loopback reaches either.
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}

// resolveAddr fills in --addr when neither the flag nor SEAM_ADDR gave it:
// the address `seam up` wrote into --data-dir, else DefaultAddr.
func (g *Globals) resolveAddr() error {
	if g.Addr != "" {
		return nil
	}
	a, err := ReadAddresses(g.DataDir)
	switch {
	case err == nil:
		g.Addr = a.GRPC
		g.addrFrom = " (written by seam up into " + filepath.Join(g.DataDir, AddressesFileName) + ")"
	case errors.Is(err, os.ErrNotExist):
		g.Addr = DefaultAddr
	default:
		return exit.Usagef("%w", err)
	}
	return nil
}
