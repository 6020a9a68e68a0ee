package idem

import "context"

// RecordPK lets the external tests find a record in the table.
var RecordPK = recordPK

// LapseOf and HandBackOf make the release calls on the record of a key:
// for tests of what they do on a table the claim would already have
// refused, which no public path reaches.
func (s *Store) LapseOf(ctx context.Context, scope, key string) error {
	_, _, err := s.lapse(ctx, recordPK(scope, key), "a token")
	return err
}

func (s *Store) HandBackOf(ctx context.Context, req Request) error {
	c, err := s.newCall(ctx, req, "test")
	if err != nil {
		return err
	}
	now := s.opts.Clock()
	_, _, err = s.handBack(ctx, c.pk, s.claimPut(c, nil, statusInProgress, now, now.Add(s.opts.Lease)))
	return err
}

// SettleFor bounds a release; a test of the bound reads it.
const SettleFor = settleFor
