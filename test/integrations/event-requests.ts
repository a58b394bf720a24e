import type { SentRequest } from "./replay";
import {
  RUDDERSTACK,
  SEGMENT,
  GEM_1,
  GEM_0_10,
  GEM_0_4,
  N8N,
  TRACKING_JS,
  PHP,
  GO,
  NODE,
  PYTHON_1,
  PYTHON_2,
  IOS,
  DOCS_2013,
  DOCS_2016,
  PHP_2013,
  IOS_2013,
} from "./sources";

/** One event track request, as a real client sends it, and the event it must leave. */
export interface ReplayedEvent extends SentRequest {
  client: string;
  name: string;
  /** Where it was taken from: repository, file and version, or documentation page. */
  source: string;
  /** id (or email for a user known by email only) to read the events by */
  user: string;
  /** The event the read shows: its name as sent, and its data (left out when the client sends none). */
  expect: { event_name: string; data?: Record<string, unknown> };
}

/** rudder-server posts the transformer's JSON without a Content-Type, keys sorted (Go maps). */
const RUDDERSTACK_HEADERS = { "User-Agent": "RudderLabs" };
/**
 * The timestamp rudder-server stamps on every event, 2020-02-02T00:23:09.544Z, as the transformer's
 * microSecondTimestamp makes it (whole seconds x 1,000,000: the milliseconds are dropped).
 */
const RUDDERSTACK_CHECK_ID = 1580602989000000;
/** superagent with .type('json') and Accept set. */
const SEGMENT_HEADERS = { "Content-Type": "application/json", Accept: "application/json" };
/** rest-client with {content_type: :json, accept: :json}. */
const GEM_JSON_HEADERS = { "Content-Type": "application/json", Accept: "application/json" };
/** rest-client 1.6 posting a Hash (2012). */
const GEM_2012_HEADERS = {
  "Content-Type": "application/x-www-form-urlencoded",
  Accept: "*/*; q=0.5, application/xml",
  "Accept-Encoding": "gzip, deflate",
};
const N8N_HEADERS = { Accept: "application/json", "content-type": "application/json", "User-Agent": "n8n" };
/** The npm 'request' library with form and json: true (n8n before its axios port). */
const N8N_LEGACY_HEADERS = { "content-type": "application/x-www-form-urlencoded", accept: "application/json" };
const JSON_HEADERS = { Accept: "application/json", "Content-Type": "application/json" };
const CONTENT_TYPE_ONLY = { "Content-Type": "application/json" };
const IOS_HEADERS = { "Content-Type": "application/json; encoding=utf-8", Accept: "application/json" };
/** curl -d: a form. */
const CURL_FORM = { "Content-Type": "application/x-www-form-urlencoded" };

/** The reserved data the browser build of @getvero/tracking adds (src/tracker.test.ts mocks these values). */
const BROWSER_DATA = {
  language: "en",
  timezone: 10,
  ianaTimezone: "Australia/Sydney",
  userAgent:
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/108.0.0.0 Safari/537.36",
};
const SEGMENT_TRAITS = {
  avatar: "avatar.jpg",
  country: "some-country",
  name: "John Doe",
  gender: "male",
  email: "jd@example.com",
  phone: "55555",
  city: "some-city",
  age: "age",
};
const RED_T_SHIRT = {
  product_name: "Red T-shirt",
  product_url: "http://www.yourdomain.com/products/red-t-shirt",
};

/**
 * Event track requests as real Vero clients send them, taken from their public code, test
 * fixtures and documentation. Path, headers and body are byte for byte what the client sends;
 * {{AUTH_TOKEN}} marks where it puts the credential.
 */
export const EVENT_REQUESTS: ReplayedEvent[] = [
  // RudderStack: track, page and screen calls (src/v0/destinations/vero/transform.js, config.js
  // TRACK, data/VeroTrackConfig.json: identity.email from properties or traits, extras.check_id
  // from the timestamp); rudder-server sends what the transformer returns.
  {
    client: "rudder-transformer",
    name: "rudder-transformer track with id, and email taken from the properties",
    source: `${RUDDERSTACK} test/integrations/destinations/vero/processor/data.ts ('Test 4')`,
    method: "POST",
    path: "/api/v2/events/track",
    headers: RUDDERSTACK_HEADERS,
    body: '{"auth_token":"{{AUTH_TOKEN}}","data":{"email":"eventIdn01@sample.com","gamesPlayed":4,"movieWatched":3},"event_name":"Random event with nonexisting userId and email","identity":{"email":"eventIdn01@sample.com","id":"eventIdn01"}}',
    user: "eventIdn01",
    expect: {
      event_name: "Random event with nonexisting userId and email",
      data: { movieWatched: 3, gamesPlayed: 4, email: "eventIdn01@sample.com" },
    },
  },
  {
    client: "rudder-transformer",
    name: "rudder-transformer track as rudder-server sends it: extras.check_id a number from the timestamp",
    source: `${RUDDERSTACK} test/integrations/destinations/vero/processor/data.ts ('Test 5' message, with the timestamp every event carries); src/v0/util/index.js formatValues microSecondTimestamp`,
    method: "POST",
    path: "/api/v2/events/track",
    headers: RUDDERSTACK_HEADERS,
    body: `{"auth_token":"{{AUTH_TOKEN}}","data":{"email":"eventIdn01@sample.com","gamesPlayed":4,"movieWatched":3},"event_name":"Random event with existing userId and some tags removed","extras":{"check_id":${RUDDERSTACK_CHECK_ID}},"identity":{"email":"eventIdn01@sample.com","id":"fprediruser001"}}`,
    user: "fprediruser001",
    expect: {
      event_name: "Random event with existing userId and some tags removed",
      data: { movieWatched: 3, gamesPlayed: 4, email: "eventIdn01@sample.com" },
    },
  },
  {
    client: "rudder-transformer",
    name: "rudder-transformer page as event 'Viewed Rudderstack Page'",
    source: `${RUDDERSTACK} test/integrations/destinations/vero/processor/data.ts ('Test 10')`,
    method: "POST",
    path: "/api/v2/events/track",
    headers: RUDDERSTACK_HEADERS,
    body: '{"auth_token":"{{AUTH_TOKEN}}","data":{"path":"/","title":"rudderstack"},"event_name":"Viewed Rudderstack Page","identity":{"id":"eventIdn01"}}',
    user: "eventIdn01",
    expect: { event_name: "Viewed Rudderstack Page", data: { title: "rudderstack", path: "/" } },
  },
  {
    client: "rudder-transformer",
    name: "rudder-transformer screen with a category as 'Viewed Onboarding Home Screen', with check_id",
    source: `${RUDDERSTACK} src/v0/destinations/vero/transform.js process (PAGE/SCREEN: 'Viewed {category} {name} Screen') for {type: 'screen', name: 'Home', properties: {category: 'Onboarding'}, userId: 'eventIdn01', timestamp}`,
    method: "POST",
    path: "/api/v2/events/track",
    headers: RUDDERSTACK_HEADERS,
    body: `{"auth_token":"{{AUTH_TOKEN}}","data":{"category":"Onboarding"},"event_name":"Viewed Onboarding Home Screen","extras":{"check_id":${RUDDERSTACK_CHECK_ID}},"identity":{"id":"eventIdn01"}}`,
    user: "eventIdn01",
    expect: { event_name: "Viewed Onboarding Home Screen", data: { category: "Onboarding" } },
  },

  // Segment's server-side Vero integration: extras.created_at in Unix seconds, source 'segment'.
  {
    client: "segment",
    name: "Segment track: identity by id, created_at a Unix time",
    source: `${SEGMENT} lib/index.js Vero.prototype.track + lib/mapper.js track; test/fixtures/track-basic.json`,
    method: "POST",
    path: "/api/v2/events/track",
    headers: SEGMENT_HEADERS,
    body: '{"auth_token":"{{AUTH_TOKEN}}","event_name":"my-event","data":{"avatar":"avatar.jpg","country":"some-country","name":"John Doe","gender":"male","email":"jd@example.com","phone":"55555","city":"some-city","age":"age"},"identity":{"id":"user-id"},"extras":{"created_at":1388534400,"source":"segment"}}',
    user: "user-id",
    expect: { event_name: "my-event", data: SEGMENT_TRAITS },
  },
  {
    client: "segment",
    name: "Segment track with context.traits.email in the identity",
    source: `${SEGMENT} lib/mapper.js track; test/fixtures/track-with-email.json`,
    method: "POST",
    path: "/api/v2/events/track",
    headers: SEGMENT_HEADERS,
    body: '{"auth_token":"{{AUTH_TOKEN}}","event_name":"my-event","data":{"avatar":"avatar.jpg","country":"some-country","name":"John Doe","gender":"male","email":"jd@example.com","phone":"55555","city":"some-city","age":"age"},"identity":{"id":"user-id","email":"user-email@example.com"},"extras":{"created_at":1388534400,"source":"segment"}}',
    user: "user-id",
    expect: { event_name: "my-event", data: SEGMENT_TRAITS },
  },
  {
    client: "segment",
    name: "Segment page as event 'viewed_page'",
    source: `${SEGMENT} lib/index.js Vero.prototype.page + lib/mapper.js page; test/fixtures/page-basic.json`,
    method: "POST",
    path: "/api/v2/events/track",
    headers: SEGMENT_HEADERS,
    body: '{"auth_token":"{{AUTH_TOKEN}}","event_name":"viewed_page","data":{"url":"http://my-favorite-site.com"},"identity":{"id":"user-id"},"extras":{"created_at":1388534400,"source":"segment"}}',
    user: "user-id",
    expect: { event_name: "viewed_page", data: { url: "http://my-favorite-site.com" } },
  },

  // @getvero/tracking: JSON, tracking_api_key in the query, extras.created_at always sent.
  {
    client: "tracking.js",
    name: "tracking.js event.track (Node): extras.created_at only",
    source: `${TRACKING_JS} src/tracker.ts event.track + sendEventTrackRequest + src/network.ts; src/tracker.test.ts 'Node environment' > 'WHEN event.track is called' (created_at: new Date().toISOString() when sent)`,
    method: "POST",
    path: "/api/v2/events/track?tracking_api_key={{AUTH_TOKEN}}",
    headers: JSON_HEADERS,
    body: '{"identity":{"id":"test-user-id","email":"test@example.com"},"event_name":"test-event-name","data":{"test":"test"},"extras":{"created_at":"2025-06-02T10:15:30.123Z"}}',
    user: "test-user-id",
    expect: { event_name: "test-event-name", data: { test: "test" } },
  },
  {
    client: "tracking.js",
    name: "tracking.js event.track with explicit extras: source, created_at and vero_conv",
    source: `${TRACKING_JS} src/tracker.ts sendEventTrackRequest; src/tracker.test.ts 'Node environment' > 'WHEN event.track is called with explicit veroConv in extras'`,
    method: "POST",
    path: "/api/v2/events/track?tracking_api_key={{AUTH_TOKEN}}",
    headers: JSON_HEADERS,
    body: '{"identity":{"id":"test-user-id","email":"test@example.com"},"event_name":"test-event-name","data":{"test":"test"},"extras":{"source":"test-source","created_at":"2024-01-01T00:00:00.000Z","vero_conv":"explicit-conversion-id"}}',
    user: "test-user-id",
    expect: { event_name: "test-event-name", data: { test: "test" } },
  },
  {
    client: "tracking.js",
    name: "tracking.js 'Visited site' after user.identify in the browser: reserved data, hostname as source",
    source: `${TRACKING_JS} src/tracker.ts user.identify (eventName 'Visited site') + sendEventTrackRequest; src/tracker.test.ts 'browser environment' > 'WHEN user.identify is called' > 'SHOULD track a "visited site" event' (created_at: new Date().toISOString() when sent)`,
    method: "POST",
    path: "/api/v2/events/track?tracking_api_key={{AUTH_TOKEN}}",
    headers: JSON_HEADERS,
    body: '{"identity":{"id":"test-user-id","email":"test@example.com"},"event_name":"Visited site","data":{"language":"en","timezone":10,"ianaTimezone":"Australia/Sydney","userAgent":"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/108.0.0.0 Safari/537.36"},"extras":{"source":"hostname.example.com","created_at":"2025-06-02T10:15:30.123Z"}}',
    user: "test-user-id",
    expect: { event_name: "Visited site", data: BROWSER_DATA },
  },

  // The vero gem 1.0: JSON to events/track.json, the user's trackable attributes (and
  // _user_type) as the identity, tracking_api_key last.
  {
    client: "vero-gem-current",
    name: "vero gem 1.0 Trackable#track!: identity with age and _user_type, extras {}",
    source: `${GEM_1} lib/vero/api_context.rb#track!, lib/vero/trackable/base.rb#to_vero, lib/vero/api/base.rb#run_api, lib/vero/api/workers/events/track_api.rb, lib/vero/http_client.rb; spec/lib/vero/trackable_spec.rb '.track!'`,
    method: "POST",
    path: "/api/v2/events/track.json",
    headers: GEM_JSON_HEADERS,
    body: '{"data":{"test":1},"event_name":"test_event","identity":{"email":"user@getvero.com","age":20,"_user_type":"User"},"extras":{},"tracking_api_key":"{{AUTH_TOKEN}}"}',
    user: "user@getvero.com",
    expect: { event_name: "test_event", data: { test: 1 } },
  },
  {
    client: "vero-gem-current",
    name: "vero gem 1.0 README DSL vero.events.track!: integer identity id",
    source: `${GEM_1} README.markdown 'Simple DSL' (# Tracking an event); lib/vero/api/events.rb`,
    method: "POST",
    path: "/api/v2/events/track.json",
    headers: GEM_JSON_HEADERS,
    body: '{"event_name":"test_event","data":{"date":"2013-02-12 16:17"},"identity":{"id":123,"email":"james@getvero.com"},"tracking_api_key":"{{AUTH_TOKEN}}"}',
    user: "123",
    expect: { event_name: "test_event", data: { date: "2013-02-12 16:17" } },
  },

  // The vero gem 0.5 to 0.10: JSON, auth_token and development_mode appended.
  {
    client: "vero-gem-pre-2025",
    name: "vero gem 0.10 Trackable#track!: auth_token and development_mode after the event",
    source: `${GEM_0_10} lib/vero/context/api.rb#track!, lib/vero/api.rb#run_api (options.merge!(config.request_params)), lib/vero/api/events/track_api.rb, lib/vero/api/base_api.rb (JSON.dump); spec/lib/trackable_spec.rb 'describe :track!'`,
    method: "POST",
    path: "/api/v2/events/track.json",
    headers: GEM_JSON_HEADERS,
    body: '{"data":{"test":1},"event_name":"test_event","identity":{"email":"durkster@gmail.com","age":20,"_user_type":"User"},"extras":{},"auth_token":"{{AUTH_TOKEN}}","development_mode":false}',
    user: "durkster@gmail.com",
    expect: { event_name: "test_event", data: { test: 1 } },
  },
  {
    client: "vero-gem-pre-2025",
    name: "vero gem 0.10 TrackAPI request: no data, identity by email",
    source: `${GEM_0_10} spec/lib/api/events/track_api_spec.rb 'describe :request' ({auth_token: 'abcd', identity: {email: 'test@test.com'}, event_name: 'test_event'}.to_json)`,
    method: "POST",
    path: "/api/v2/events/track.json",
    headers: GEM_JSON_HEADERS,
    body: '{"auth_token":"{{AUTH_TOKEN}}","identity":{"email":"test@test.com"},"event_name":"test_event"}',
    user: "test@test.com",
    expect: { event_name: "test_event" },
  },

  // The vero gem 0.4 (2012): forms with bracket-nested identity and data.
  {
    client: "vero-gem-2012",
    name: "vero gem 0.4 Trackable#track!: a form, identity[...] and data[...] nested, development_mode=true",
    source: `${GEM_0_4} lib/vero/context.rb#track!, lib/vero/api/events/track_api.rb (RestClient.post(url, @options)); spec/lib/trackable_spec.rb 'describe :track!' (RestClient.should_receive(:post))`,
    method: "POST",
    path: "/api/v2/events/track.json",
    headers: GEM_2012_HEADERS,
    body: "auth_token={{AUTH_TOKEN}}&development_mode=true&data[test]=1&event_name=test_event&identity[email]=durkster%40gmail.com&identity[age]=20&identity[_user_type]=User",
    user: "durkster@gmail.com",
    expect: { event_name: "test_event", data: { test: "1" } },
  },
  {
    client: "vero-gem-2012",
    name: "vero gem 0.4 TrackAPI request: a form without data",
    source: `${GEM_0_4} spec/lib/api/events/track_api_spec.rb 'describe :request'`,
    method: "POST",
    path: "/api/v2/events/track.json",
    headers: GEM_2012_HEADERS,
    body: "auth_token={{AUTH_TOKEN}}&identity[email]=test%40test.com&event_name=test_event",
    user: "test@test.com",
    expect: { event_name: "test_event" },
  },

  // vero-php: JSON, auth_token first, empty data and extras as null.
  {
    client: "vero-php",
    name: "vero-php track (README): extras null",
    source: `${PHP} vero/client.php Client::track + _send; README.md $v->track("Subscribe to service", array('id' => '1234567890'), array('Plan name' => 'XL Plan', 'Price' => 149))`,
    method: "POST",
    path: "/api/v2/events/track.json",
    headers: JSON_HEADERS,
    body: '{"auth_token":"{{AUTH_TOKEN}}","identity":{"id":"1234567890"},"event_name":"Subscribe to service","data":{"Plan name":"XL Plan","Price":149},"extras":null}',
    user: "1234567890",
    expect: { event_name: "Subscribe to service", data: { "Plan name": "XL Plan", Price: 149 } },
  },
  {
    client: "vero-php",
    name: "vero-php track without data: data and extras null",
    source: `${PHP} vero.php Vero::track($event_name, $identity, $data = array(), $extras = array()) + vero/client.php Client::track ($data == array() ? NULL : $data)`,
    method: "POST",
    path: "/api/v2/events/track.json",
    headers: JSON_HEADERS,
    body: '{"auth_token":"{{AUTH_TOKEN}}","identity":{"id":"1234567890"},"event_name":"Subscribe to service","data":null,"extras":null}',
    user: "1234567890",
    expect: { event_name: "Subscribe to service" },
  },
  {
    client: "vero-php",
    name: "vero-php track of the 2016 docs: json_encode escapes '/' as '\\/'",
    source: `${PHP} vero/client.php Client::track + _send (json_encode); ${DOCS_2016} _includes/events/track/example.md (php example)`,
    method: "POST",
    path: "/api/v2/events/track.json",
    headers: JSON_HEADERS,
    body: '{"auth_token":"{{AUTH_TOKEN}}","identity":{"id":"123"},"event_name":"Viewed product","data":{"product_name":"Red T-shirt","product_url":"http:\\/\\/www.yourdomain.com\\/products\\/red-t-shirt"},"extras":null}',
    user: "123",
    expect: { event_name: "Viewed product", data: RED_T_SHIRT },
  },
  {
    client: "vero-php-2013",
    name: 'vero-php 2013 event.php example: development_mode "false" (string)',
    source: `${PHP_2013} event.php (PHP 5 json_encode: 42.00 as 42)`,
    method: "POST",
    path: "/api/v2/events/track.json",
    headers: JSON_HEADERS,
    body: '{"auth_token":"{{AUTH_TOKEN}}","identity":{"id":"12345","email":"james@getvero.com"},"event_name":"Purchased product","data":{"sku":"12221","unit_cost":42},"development_mode":"false"}',
    user: "12345",
    expect: { event_name: "Purchased product", data: { sku: "12221", unit_cost: 42 } },
  },

  // n8n's Vero node: JSON, data and extras as JSON text, the email also at the top level,
  // auth_token last (Object.assign(body, form)).
  {
    client: "n8n",
    name: "n8n event track with UI data and extras: both as JSON text, a stray top-level email",
    source: `${N8N} (event/track, jsonParameters false: body.data = JSON.stringify(dataAttributes), body.extras = JSON.stringify(extraAttributes)) + GenericFunctions.ts veroApiRequest + packages/@n8n/backend-network/src/http/axios/legacy.ts buildAxiosConfigFromLegacyRequest`,
    method: "POST",
    path: "/api/v2/events/track",
    headers: N8N_HEADERS,
    body: '{"identity":{"id":"123","email":"damienb@getvero.com"},"event_name":"Viewed product","email":"damienb@getvero.com","data":"{\\"product_name\\":\\"Red T-shirt\\"}","extras":"{\\"source\\":\\"n8n\\"}","auth_token":"{{AUTH_TOKEN}}"}',
    user: "123",
    expect: { event_name: "Viewed product", data: { product_name: "Red T-shirt" } },
  },
  {
    client: "n8n",
    name: "n8n event track with JSON parameters: typed data and extras.created_at, as JSON text",
    source: `${N8N} (event/track, jsonParameters true: JSON.stringify(validateJSON(dataAttributesJson)), likewise extraAttributesJson)`,
    method: "POST",
    path: "/api/v2/events/track",
    headers: N8N_HEADERS,
    body: '{"identity":{"id":"124","email":"damienb@getvero.com"},"event_name":"Purchased item","email":"damienb@getvero.com","data":"{\\"price\\":19.99,\\"quantity\\":2,\\"gift\\":false}","extras":"{\\"created_at\\":\\"2023-05-30T04:46:31+0000\\"}","auth_token":"{{AUTH_TOKEN}}"}',
    user: "124",
    expect: { event_name: "Purchased item", data: { price: 19.99, quantity: 2, gift: false } },
  },
  {
    client: "n8n",
    name: "n8n event track without data or extras",
    source: `${N8N} (event/track, dataAttributesUi and extraAttributesUi left at their default {})`,
    method: "POST",
    path: "/api/v2/events/track",
    headers: N8N_HEADERS,
    body: '{"identity":{"id":"125","email":"damienb@getvero.com"},"event_name":"Signed up","email":"damienb@getvero.com","auth_token":"{{AUTH_TOKEN}}"}',
    user: "125",
    expect: { event_name: "Signed up" },
  },
  {
    client: "n8n",
    name: "n8n (legacy request-library era) event track: a form, identity[...] nested, data as JSON text",
    source: `${N8N} (event/track) + GenericFunctions.ts (form: {auth_token, ...body}, json: true) as executed by the npm 'request' library (qs.stringify)`,
    method: "POST",
    path: "/api/v2/events/track",
    headers: N8N_LEGACY_HEADERS,
    body: "auth_token={{AUTH_TOKEN}}&identity%5Bid%5D=123&identity%5Bemail%5D=damienb%40getvero.com&event_name=Viewed%20product&email=damienb%40getvero.com&data=%7B%22product_name%22%3A%22Red%20T-shirt%22%7D",
    user: "123",
    expect: { event_name: "Viewed product", data: { product_name: "Red T-shirt" } },
  },

  // getvero-go: JSON, integer ids as text, an absent email as "".
  {
    client: "getvero-go",
    name: 'getvero-go TrackEvent(1337, email, "item sold") (README): no data',
    source: `${GO} events.go TrackEvent + main.go sendToVeroPost; README.md 'Track Event'`,
    method: "POST",
    path: "/api/v2/events/track.json",
    headers: CONTENT_TYPE_ONLY,
    body: '{"auth_token":"{{AUTH_TOKEN}}","identity":{"id":"1337","email":"fakeemail@example.com"},"event_name":"item sold"}',
    user: "1337",
    expect: { event_name: "item sold" },
  },
  {
    client: "getvero-go",
    name: "getvero-go TrackEventWithData with a map (README): keys sorted",
    source: `${GO} events.go TrackEventWithData; README.md 'Track Event With Data' (q["Qty"] = 9001, q["Item"] = "t-shirt")`,
    method: "POST",
    path: "/api/v2/events/track.json",
    headers: CONTENT_TYPE_ONLY,
    body: '{"auth_token":"{{AUTH_TOKEN}}","identity":{"id":"1337","email":"fakeemail@example.com"},"event_name":"item sold","data":{"Item":"t-shirt","Qty":9001}}',
    user: "1337",
    expect: { event_name: "item sold", data: { Item: "t-shirt", Qty: 9001 } },
  },
  {
    client: "getvero-go",
    name: 'getvero-go TrackEvent("abc123", "", ...): identity.email an empty string',
    source: `${GO} events.go getveroEventIdentity (Email without omitempty) + TrackEvent; README.md 'Basic Example' (string user id "abc123")`,
    method: "POST",
    path: "/api/v2/events/track.json",
    headers: CONTENT_TYPE_ONLY,
    body: '{"auth_token":"{{AUTH_TOKEN}}","identity":{"id":"abc123","email":""},"event_name":"item sold"}',
    user: "abc123",
    expect: { event_name: "item sold" },
  },

  // vero-node: superagent JSON of the message, auth_token appended: the user as a top-level id.
  {
    client: "vero-node",
    name: "vero-node track({id: 1, event_name}) (test): top-level id, no identity",
    source: `${NODE} lib/index.js Vero.prototype.track/queue, ENDPOINTS.TRACK; test/tests.js '#track should send a message to TRACK endpoint'`,
    method: "POST",
    path: "/api/v2/events/track",
    headers: CONTENT_TYPE_ONLY,
    body: '{"id":1,"event_name":"test","auth_token":"{{AUTH_TOKEN}}"}',
    user: "1",
    expect: { event_name: "test" },
  },

  // vero-python: 1.x a JSON string without a Content-Type; 2.x requests' json=.
  {
    client: "vero-python-1.x",
    name: "vero-python 1.x add_event (test): identity.email null, integer id, lists and nested data, no Content-Type",
    source: `${PYTHON_1} vero/client.py add_event + _fire_request (data=json.dumps(payload)); vero/tests/client_test.py test_add_event (event_data: tuple as a list, key 1 as "1")`,
    method: "POST",
    path: "/api/v2/events/track",
    headers: {},
    body: '{"auth_token": "{{AUTH_TOKEN}}", "event_name": "test event", "identity": {"id": 1, "email": null}, "data": {"string data": "a", "numeric data": 123, "float data": 1.23, "list data": ["a", 1], "tuple data": ["a", 1], "dict data": {"a": 1, "1": "a"}}, "development_mode": false}',
    user: "1",
    expect: {
      event_name: "test event",
      data: {
        "string data": "a",
        "numeric data": 123,
        "float data": 1.23,
        "list data": ["a", 1],
        "tuple data": ["a", 1],
        "dict data": { a: 1, "1": "a" },
      },
    },
  },
  {
    client: "vero-python",
    name: "vero-python 2.x add_event with email (README)",
    source: `${PYTHON_2} vero/client.py add_event + _fire_request (json=payload); README.rst 'Add event'`,
    method: "POST",
    path: "/api/v2/events/track",
    headers: CONTENT_TYPE_ONLY,
    body: '{"auth_token": "{{AUTH_TOKEN}}", "event_name": "Visited Website", "identity": {"id": 2, "email": "janedoe@example.com"}, "data": {"date": "today", "visited": "front page"}}',
    user: "2",
    expect: { event_name: "Visited Website", data: { date: "today", visited: "front page" } },
  },
  {
    client: "vero-python",
    name: "vero-python 2.x add_event without email (test): identity.email null",
    source: `${PYTHON_2} vero/tests/client_test.py test_add_event`,
    method: "POST",
    path: "/api/v2/events/track",
    headers: CONTENT_TYPE_ONLY,
    body: '{"auth_token": "{{AUTH_TOKEN}}", "event_name": "track user", "identity": {"id": 1, "email": null}, "data": {"color": "red", "number": 2}}',
    user: "1",
    expect: { event_name: "track user", data: { color: "red", number: 2 } },
  },

  // vero-ios: the identity is the caller's dictionary, with any attributes in it.
  {
    client: "vero-ios",
    name: "vero-ios eventsTrack (README): pretty-printed, identity with a boolean attribute",
    source: `${IOS} Vero.m eventsTrack:identity:data:developmentMode: + makeApiCall (NSJSONWritingPrettyPrinted); README.md 'Track an event when a user signs up'`,
    method: "POST",
    path: "/api/v2/events/track.json",
    headers: IOS_HEADERS,
    body: '{\n  "event_name" : "Signed up",\n  "auth_token" : "{{AUTH_TOKEN}}",\n  "identity" : {\n    "id" : "james@getvero.com",\n    "awesome" : true\n  },\n  "development_mode" : false,\n  "data" : {\n    "source" : "iphone"\n  }\n}',
    user: "james@getvero.com",
    expect: { event_name: "Signed up", data: { source: "iphone" } },
  },
  {
    client: "vero-ios-2013",
    name: "vero-ios 2013 eventsTrack (JSONKit compact): development_mode lost to the nil terminator",
    source: `${IOS_2013} Vero.m eventsTrack (devMode false ends initWithObjectsAndKeys:) + makeApiCall ([params JSONString]); README.md`,
    method: "POST",
    path: "/api/v2/events/track.json",
    headers: IOS_HEADERS,
    body: '{"event_name":"Signed up","auth_token":"{{AUTH_TOKEN}}","identity":{"id":"james@getvero.com","awesome":true},"data":{"source":"iphone"}}',
    user: "james@getvero.com",
    expect: { event_name: "Signed up", data: { source: "iphone" } },
  },

  // Vero's documentation: 2013 JSON and curl forms, 2016 curl forms with JSON text, today's curl.
  {
    client: "vero-docs",
    name: "vero-docs 2013 events track: JSON, identity with age",
    source: `${DOCS_2013} sections/api/events.md 'Track events' example request`,
    method: "POST",
    path: "/api/v2/events/track.json",
    headers: CONTENT_TYPE_ONLY,
    body: '{\n  "auth_token": "{{AUTH_TOKEN}}",\n  "identity": {\n    "id": "new_email@getvero.com",\n    "email": "new_email@getvero.com",\n    "age": 25\n  },\n  "event_name": "test_event",\n  "data": {\n    "order_id": "10"\n  },\n  "development_mode": false\n}',
    user: "new_email@getvero.com",
    expect: { event_name: "test_event", data: { order_id: "10" } },
  },
  {
    client: "vero-docs",
    name: "vero-docs 2013 curl: a form, the user by identity[email] only, data[link] unencoded",
    source: `${DOCS_2013} sections/curl.md 'Tracking events' > 'Optional data' example request`,
    method: "POST",
    path: "/api/v2/events/track.json",
    headers: CURL_FORM,
    body: "auth_token={{AUTH_TOKEN}}&identity[email]=chris.hexton@gmail.com&event_name=viewed_documentation&data[link]=http://getvero.com/docs",
    user: "chris.hexton@gmail.com",
    expect: { event_name: "viewed_documentation", data: { link: "http://getvero.com/docs" } },
  },
  {
    client: "vero-docs",
    name: "vero-docs 2016 track curl: a form with identity and data as raw JSON text",
    source: `${DOCS_2016} _includes/events/track/example.md (bash example)`,
    method: "POST",
    path: "/api/v2/events/track",
    headers: CURL_FORM,
    body: 'auth_token={{AUTH_TOKEN}}&identity={"id": 1234, "email": "john@smith.com"}&event_name=Viewed product&data={"product_name": "Red T-shirt", "product_url": "http://www.yourdomain.com/products/red-t-shirt"}',
    user: "1234",
    expect: { event_name: "Viewed product", data: RED_T_SHIRT },
  },
  {
    client: "vero-docs",
    name: "vero-docs current track curl: auth_token in the query, numeric id, extras source and created_at",
    source: "https://help.getvero.com/api-reference/events/track (curl example)",
    method: "POST",
    path: "/api/v2/events/track?auth_token={{AUTH_TOKEN}}",
    headers: CONTENT_TYPE_ONLY,
    body: '\n{\n  "identity": {\n    "id": 1000,\n    "email": "test@example.com"\n  },\n  "event_name": "Viewed product",\n  "data": {\n    "product_name": "Red T-shirt",\n    "product_url": "http://www.yourdomain.com/products/red-t-shirt"\n  },\n  "extras": {\n    "source": "Segment.com",\n    "created_at": "2023-05-30T04:46:31+0000"\n  }\n}\n',
    user: "1000",
    expect: { event_name: "Viewed product", data: RED_T_SHIRT },
  },
];
