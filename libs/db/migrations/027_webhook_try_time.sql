-- How long an endpoint's last try took, from its start to the answer or the failure, in ms; null
-- before its first. A slow endpoint is paced, as a failing one is (docs/webhooks.md, "What a bad
-- endpoint costs"), and ctl webhook list shows it.
ALTER TABLE webhook_endpoints ADD COLUMN last_try_ms integer;
