package benchutil

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
)

// EmptyBucket deletes every object of a bench's bucket (several GiB at the largest sizes), as
// far as the store answers: a bench cleans up before it starts (a run stopped early left its
// objects) and when it ends.
func EmptyBucket(client *awss3.Client, bucket string) {
	ctx := context.Background()
	p := awss3.NewListObjectsV2Paginator(client, &awss3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return
		}
		for _, o := range page.Contents {
			_, _ = client.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: aws.String(bucket), Key: o.Key})
		}
	}
}
