export interface Item {
  id: string;
  price: number;
}

export function total(items: Item[]): number {
  return items.reduce((sum, item) => sum + item.price, 0);
}

export class Cart {
  private items: Item[] = [];

  add(item: Item): void {
    this.items.push(item);
  }
}
