import { describe, expect, it } from "vitest";
import { changeCursor, changePositionOf, positionBefore, type ChangePosition } from "@cm/domain";

const cursorText = (text: string) => Buffer.from(text).toString("base64url");
const position = (epoch: string, t: string, node: string, xid: string, seq: string): ChangePosition => ({
  epoch,
  t,
  node,
  xid,
  seq,
});

describe("change feed cursors", () => {
  it("keeps a one-Postgres position in the cursor's first form, so that cursors given before stay valid", () => {
    const onePostgres = position("0", "0", "0", "742", "12");
    expect(changeCursor(1, onePostgres)).toBe(cursorText("changes:1:742:12"));
    expect(changePositionOf(1, cursorText("changes:1:742:12"))).toEqual(onePostgres);
  });

  it("names every part of a Citus position", () => {
    const onCitus = position("9", "1795730474466056", "2", "865", "562949953421313");
    const cursor = changeCursor(1, onCitus);
    expect(cursor).toBe(cursorText("changes:1:9:1795730474466056:2:865:562949953421313"));
    expect(changePositionOf(1, cursor)).toEqual(onCitus);
  });

  it("names a change inside a stored row by its index, last", () => {
    const inside = { ...position("0", "0", "0", "742", "12"), index: "3" };
    expect(changeCursor(1, inside)).toBe(cursorText("changes:1:742:12:3"));
    expect(changePositionOf(1, cursorText("changes:1:742:12:3"))).toEqual(inside);
    const onCitus = { ...position("9", "1", "2", "3", "4"), index: "0" };
    expect(changePositionOf(1, changeCursor(1, onCitus))).toEqual(onCitus);
  });

  it("refuses another project's cursor, a second text for one position, and parts out of range", () => {
    const cursor = changeCursor(1, position("9", "1", "2", "3", "4"));
    expect(changePositionOf(2, cursor)).toBeNull();
    expect(changePositionOf(1, cursorText("changes:1:0:0:0:742:12"))).toBeNull();
    expect(changePositionOf(1, cursorText("changes:1:1:2:3:4"))).toBeNull();
    expect(changePositionOf(1, cursorText("changes:1:742:12:2147483648"))).toBeNull();
    expect(changePositionOf(1, cursorText("changes:1:742:12:07"))).toBeNull();
    expect(changePositionOf(1, cursorText("changes:1:0742:12"))).toBeNull();
    expect(changePositionOf(1, cursorText("changes:1:9:1:2147483648:3:4"))).toBeNull();
    expect(changePositionOf(1, cursorText("changes:1:18446744073709551616:4"))).toBeNull();
  });

  it("orders by epoch, then clock, node, transaction and number", () => {
    const ordered = [
      position("0", "0", "0", "900", "5"),
      position("1", "5", "2", "10", "1"),
      position("1", "6", "1", "9", "1"),
      position("1", "6", "2", "1", "1"),
      position("1", "6", "2", "1", "2"),
      position("2", "0", "0", "0", "0"),
    ];
    for (let i = 0; i + 1 < ordered.length; i += 1) {
      expect(positionBefore(ordered[i]!, ordered[i + 1]!)).toBe(true);
      expect(positionBefore(ordered[i + 1]!, ordered[i]!)).toBe(false);
    }
    expect(positionBefore(ordered[0]!, ordered[0]!)).toBe(false);
  });

  it("orders a row's changes by index, a position without one past them all", () => {
    const row = position("0", "0", "0", "900", "5");
    const ordered = [
      { ...row, index: "0" },
      { ...row, index: "1" },
      { ...row, index: "10" },
      row,
      position("0", "0", "0", "900", "6"),
    ];
    for (let i = 0; i + 1 < ordered.length; i += 1) {
      expect(positionBefore(ordered[i]!, ordered[i + 1]!)).toBe(true);
      expect(positionBefore(ordered[i + 1]!, ordered[i]!)).toBe(false);
    }
  });
});
