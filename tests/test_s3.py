"""lance_fw on S3 (a real SeaweedFS on loopback, see s3_server.py)."""

from __future__ import annotations


def test_fixture_serves_a_fresh_bucket(s3_server):
    import s3fs

    bucket = s3_server.new_bucket()
    fs = s3fs.S3FileSystem(key=s3_server.env["AWS_ACCESS_KEY_ID"], secret=s3_server.env["AWS_SECRET_ACCESS_KEY"],
                           endpoint_url=s3_server.endpoint)
    fs.pipe_file(bucket + "/x", b"abc")
    assert fs.cat_file(bucket + "/x") == b"abc"
    assert s3_server.new_bucket() != bucket
