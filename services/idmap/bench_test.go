package idmap_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/seamdata/seam/platform/storage/storagetest"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	"github.com/seamdata/seam/services/idmap"
)

// BenchmarkImportCSV imports a 1,000,000-pair uuid,int CSV into the
// embedded store: parse, stream, check one-to-one, commit, index.
//
//	go test -run '^$' -bench BenchmarkImportCSV -benchtime 1x ./
func BenchmarkImportCSV(b *testing.B) {
	const n = 1_000_000
	r := rand.New(rand.NewPCG(3, 4))
	var file bytes.Buffer
	w := csv.NewWriter(&file)
	for i := range n {
		_ = w.Write([]string{uuidOf(r), strconv.Itoa(i + 1)})
	}
	w.Flush()
	for b.Loop() {
		b.StopTimer()
		c, _ := start(b, storagetest.SQLiteURL(b))
		createCustomer(b, c)
		b.StartTimer()
		stream, err := c.ImportPairs(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if err := stream.Send(&idmapv1.ImportPairsRequest{Message: &idmapv1.ImportPairsRequest_Header{Header: header(false, 0)}}); err != nil {
			b.Fatal(err)
		}
		rd := csv.NewReader(bytes.NewReader(file.Bytes()))
		rd.ReuseRecord = true
		chunk := &idmapv1.PairChunk{}
		for {
			rec, err := rd.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			chunk.Pairs = append(chunk.Pairs, &idmapv1.Pair{From: rec[0], To: rec[1]})
			if len(chunk.Pairs) == 10_000 {
				if err := stream.Send(&idmapv1.ImportPairsRequest{Message: &idmapv1.ImportPairsRequest_Chunk{Chunk: chunk}}); err != nil {
					b.Fatal(err)
				}
				chunk = &idmapv1.PairChunk{}
			}
		}
		resp, err := stream.CloseAndRecv()
		if err != nil || !resp.Committed || resp.TableSize != n {
			b.Fatalf("import = %v, %v", resp, err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "pairs/s")
}

// BenchmarkTranslateGRPC translates 10,000-id batches of random UUIDs over
// a real gRPC server on a loopback TCP listener, on a 1,000,000-pair table.
//
//	go test -run '^$' -bench BenchmarkTranslateGRPC -benchtime 3s ./
func BenchmarkTranslateGRPC(b *testing.B) {
	ctx := context.Background()
	srv, err := idmap.New(ctx, idmap.Config{StoreURL: storagetest.SQLiteURL(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = srv.Close() }() // after the benchmark
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	gs := grpc.NewServer()
	srv.Register(gs)
	go func() { _ = gs.Serve(lis) }()
	defer gs.Stop()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	c := idmapv1.NewIdMapServiceClient(conn)
	createCustomer(b, c)
	r := rand.New(rand.NewPCG(5, 6))
	pairs := make([][2]string, 1_000_000)
	for i := range pairs {
		pairs[i] = [2]string{uuidOf(r), strconv.Itoa(i + 1)}
	}
	importPairs(b, c, header(false, 0), pairs)
	const batch = 10_000
	ids := make([]string, batch)
	for i := range ids {
		ids[i] = pairs[r.IntN(len(pairs))][0]
	}
	req := &idmapv1.TranslateRequest{Namespace: "customer", FromFormat: "uuid", ToFormat: "legacy-int", Ids: ids}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := c.Translate(ctx, req)
			if err != nil || resp.Hits != batch {
				b.Errorf("Translate = %v hits, %v", resp.GetHits(), err)
				return
			}
		}
	})
	b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "ids/s")
}
