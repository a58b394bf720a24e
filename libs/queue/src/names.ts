export const IDENTIFY_QUEUE = "identify";
export const TOPIC_FANOUT_QUEUE = "topic-fanout";
export const MAINTENANCE_QUEUE = "maintenance";
