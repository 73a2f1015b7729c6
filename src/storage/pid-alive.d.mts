export declare function pidAlive(pid: number): boolean;
