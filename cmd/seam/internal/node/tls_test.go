package node_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seamdata/seam/cmd/seam/internal/node"
	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/dial"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// selfSigned writes a certificate for 127.0.0.1 and its key into dir.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "seam test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// With a certificate configured, gRPC and REST are served over TLS only,
// and the services still reach each other (over TLS) inside the process.
func TestUpServesTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile := selfSigned(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type addrs struct{ grpc, http string }
	ready := make(chan addrs, 1)
	done := make(chan error, 1)
	go func() {
		done <- node.Run(ctx, node.Config{
			Services: node.ServiceNames, Bootstrap: true, DataDir: dir,
			GRPCAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", TLSCert: certFile, TLSKey: keyFile,
			LogFormat: "text", LogLevel: "error",
		}, node.Hooks{Log: io.Discard, Ready: func(g, h string) { ready <- addrs{g, h} }})
	}()
	var a addrs
	select {
	case a = <-ready:
	case err := <-done:
		t.Fatalf("seam up with TLS stopped: %v", err)
	}
	tokenBytes, err := os.ReadFile(filepath.Join(dir, auth.AdminTokenFileName))
	if err != nil {
		t.Fatal(err)
	}
	token := string(tokenBytes[:len(tokenBytes)-1])

	pemBytes, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemBytes)
	tlsCfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}

	conn, err := dial.Conn(a.grpc, dial.Options{Token: token, TLS: tlsCfg})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := registryv1.NewRegistryServiceClient(conn).ListSubjects(ctx, &registryv1.ListSubjectsRequest{}); err != nil {
		t.Fatalf("gRPC over TLS: %v", err)
	}

	plain, err := dial.Conn(a.grpc, dial.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := registryv1.NewRegistryServiceClient(plain).ListSubjects(ctx, &registryv1.ListSubjectsRequest{}); err == nil {
		t.Error("plaintext gRPC to a TLS server succeeded, want an error")
	}

	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	req, _ := http.NewRequest("GET", "https://"+a.http+"/v1/subjects", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("REST over TLS: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("REST over TLS = %d, want 200", resp.StatusCode)
	}
	// The incident route calls the services over the in-process
	// connection, which speaks TLS too: an unknown subject is the
	// registry's NotFound, not an unreachable service.
	req, _ = http.NewRequest("GET", "https://"+a.http+"/v1/subjects/no.such/incident", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err = client.Do(req)
	if err != nil {
		t.Fatalf("incident over TLS: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "no.such") {
		t.Errorf("incident of an unknown subject over TLS = %d %s, want 404 naming it", resp.StatusCode, body)
	}
	client.CloseIdleConnections()

	cancel()
	if err := <-done; err != nil {
		t.Errorf("shutdown: %v", err)
	}
}
