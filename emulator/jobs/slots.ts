// A counting semaphore: at most N holders at once, the rest wait in arrival order.
export class Slots {
  private used = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly size: number) {}

  acquire(): Promise<() => void> {
    return new Promise((resolve) => {
      const grant = () => {
        this.used++;
        let released = false;
        resolve(() => {
          if (released) return;
          released = true;
          this.used--;
          this.waiting.shift()?.();
        });
      };
      if (this.used < this.size) grant();
      else this.waiting.push(grant);
    });
  }
}
