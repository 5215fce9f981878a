// Package blastradius is `seam blast-radius`: every consumer, direct and
// transitive, that a change to a subject reaches.
package blastradius

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/output"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// New returns `seam blast-radius`.
func New(g *client.Globals) *cobra.Command {
	var fields []string
	var file string
	return client.ServiceCommand(g, registryv1.NewRegistryServiceClient, "blast-radius SUBJECT", cobra.ExactArgs(1), client.Help{
		Short: "Every consumer, direct and transitive, a change to a subject reaches",
		Example: `  seam blast-radius shop.orders
  seam blast-radius shop.orders --field customer_id
  seam blast-radius shop.orders -f shop_orders_v2.yaml`,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringSliceVar(&fields, "field", nil, "changed fields (repeatable); default: the whole subject")
			fs.StringVarP(&file, "file", "f", "", "a proposed contract: the changed fields are its breaking changes")
		},
	}, func(cmd *cobra.Command, args []string, rc registryv1.RegistryServiceClient) error {
		req := &registryv1.GetBlastRadiusRequest{Subject: args[0], Fields: fields}
		if file != "" {
			c, err := client.ReadContract(cmd, file)
			if err != nil {
				return err
			}
			req.Proposed = c
		}
		return client.Show(cmd, g, "blast radius of "+args[0], rc.GetBlastRadius, req,
			func(w io.Writer, resp *registryv1.GetBlastRadiusResponse) error {
				scope := "the whole subject"
				if len(resp.GetChangedFields()) > 0 {
					scope = strings.Join(resp.GetChangedFields(), ", ")
				}
				fmt.Fprintf(w, "%s, changing %s: %d consumers\n", args[0], scope, len(resp.GetConsumers()))
				return PrintAffected(w, "consumers affected", resp.GetConsumers())
			})
	})
}

// PrintAffected prints the consumers a change reaches, under title.
func PrintAffected(w io.Writer, title string, consumers []*registryv1.AffectedConsumer) error {
	if len(consumers) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\n%s:\n", title)
	t := output.NewTable(w, "CONSUMER", "DEPTH", "VIA", "USAGE", "OWNER")
	for _, c := range consumers {
		var usages []string
		for _, u := range c.GetUsages() {
			usages = append(usages, strings.ToLower(output.Enum(u, "USAGE_KIND_")))
		}
		t.Row(c.GetConsumer(), strconv.Itoa(int(c.GetDepth())), strings.Join(c.GetPath(), " → "), output.OrDash(strings.Join(usages, ",")), output.OrDash(c.GetOwner()))
	}
	return t.Flush()
}
