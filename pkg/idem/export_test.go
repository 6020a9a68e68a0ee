package idem

// RecordPK lets the external tests find a record in the table.
var RecordPK = recordPK
