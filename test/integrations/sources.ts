/** The public sources replayed requests are taken from: repository@commit (and what it is). */
export const RUDDERSTACK = "rudderlabs/rudder-transformer@c98d160cfaddc5fe5ddee7891c4f4a23014b9aa8";
export const SEGMENT = "segment-boneyard/integration-vero@0be43f5a0f3f65f2fe7e710af77dbac2e31e906e";
export const GEM_1 = "getvero/vero@0f6348504d8501118f57474acd4452f6154ce5a3 (VERSION 1.0.0)";
export const GEM_0_10 = "getvero/vero@5e82f7e (VERSION 0.10.0)";
export const GEM_0_4 = "getvero/vero@3ab6407 (VERSION 0.4)";
export const N8N = "n8n-io/n8n@85a037784a69dce8297a861c05f16eeffefaa20f packages/nodes-base/nodes/Vero/Vero.node.ts";
export const TRACKING_JS = "getvero/tracking.js@d02ab8c8637e99dbe85f6162d71ec3f0d7bfce7a";
export const PHP = "getvero/vero-php@687df2004afb73011b74b1d79c8a321ab93c9216";
export const GO = "StirlingMarketingGroup/getvero-go@bfee06bb19dc72ad057cae62206a36f8b46ff146";
export const NODE =
  "jylamont/vero-node@1736adb463d90966084f5f951975fe2cd5c4013d (npm 'vero', repository getvero/vero-node)";
export const PYTHON_1 = "getvero/vero-python@2cf358da0eaa784641ca4fb9b19b9bb54865519c (1.1.4)";
export const PYTHON_2 = "waveaccounting/vero-python@c1c21f816cfc088d3bbacd52021859ea05cbf581 (2.0.1)";
export const IOS = "getvero/vero-ios@19db8100528442c8fcebfa7d47f9785c39bf795c";
export const DOCS_2013 = "stinkyink/vero-api@d7580684be5822f2af05309d9aa8f8ef24e9ac1e (Vero's 2013 API docs)";
export const DOCS_2016 =
  "drianpauL/developers.getvero.com@1a59152cd71d6032ecbf47fa59ea8d96cdaf0907 (developers.getvero.com, Jan 2016)";
export const PHP_2013 = "getvero/vero-php@93f9223e6fad49389c76cca53448e7b4aa3e8e69 (2013-04-25)";
export const IOS_2013 = "getvero/vero-ios@4218a0b031f1900f5bfd5a5610dd9cce02a7ff1f (2013-07-11)";
