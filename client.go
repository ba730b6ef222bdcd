package rdmalab

import "context"

// clientKey is the context key of WithClient.
type clientKey struct{}

// WithClient returns ctx carrying the client a learner's machine is
// admitted for: web's per-address key (the one its admission counts by).
// Terminals remember it with the learner's machine, so that what one
// client keeps (kept machines) is bounded per client, not only per
// learner: a learner is a cookie, and one address makes any number.
func WithClient(ctx context.Context, client string) context.Context {
	return context.WithValue(ctx, clientKey{}, client)
}

// ClientOf is the client WithClient put in ctx, "" when none.
func ClientOf(ctx context.Context) string {
	c, _ := ctx.Value(clientKey{}).(string)
	return c
}
