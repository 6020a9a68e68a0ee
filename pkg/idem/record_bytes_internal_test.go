package idem

import (
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// A header value that is not valid UTF-8 is encoded by hand as
// attributevalue encodes it, as binary, and reads back as it was.
func TestAHeaderThatIsNotUTF8IsEncodedAsBinary(t *testing.T) {
	r := record{PK: "1:b:k", Status: statusCompleted, Response: &storedResponse{StatusCode: 200,
		Header: storedHeader{"Content-Disposition": "filename=caf\xe9", "Content-Type": "text/plain"}}}
	want, err := attributevalue.MarshalMap(&r)
	if err != nil {
		t.Fatal(err)
	}
	got := r.item()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("hand encoding\n%#v\nattributevalue\n%#v", got, want)
	}
	headers := got[attrResponse].(*types.AttributeValueMemberM).Value["headers"].(*types.AttributeValueMemberM).Value
	if _, ok := headers["Content-Disposition"].(*types.AttributeValueMemberB); !ok {
		t.Errorf("a value that is not UTF-8 is %T, want binary", headers["Content-Disposition"])
	}
	if back, err := decodeRecord(got); err != nil || !reflect.DeepEqual(*back, r) {
		t.Errorf("round trip: %+v, %v; want %+v", back, err, r)
	}
}
